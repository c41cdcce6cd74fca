package workflow

import (
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/runnerdev/runner/internal/testkit"
)

// hostileInputs are malformed workflows of every kind: each must be refused
// with positioned errors, quickly, never with a panic or a hang.
func hostileInputs() map[string]string {
	rng := rand.New(rand.NewPCG(1, 2))
	garbage := make([]byte, 100_000)
	for i := range garbage {
		garbage[i] = byte(rng.UintN(256))
	}
	var deepBlock strings.Builder
	for i := range 2000 {
		deepBlock.WriteString(strings.Repeat("  ", i) + "a:\n")
	}
	var manyKeys strings.Builder
	manyKeys.WriteString("- shell: x\n")
	for i := range 5000 {
		manyKeys.WriteString("  k" + strings.Repeat("x", i%7) + string(rune('a'+i%26)) + ": 1\n")
	}
	return map[string]string{
		"deep flow nesting":  strings.Repeat("[", 100_000) + strings.Repeat("]", 100_000),
		"deep block nesting": deepBlock.String(),
		"deep JSON":          strings.Repeat(`{"a":`, 50_000) + "1" + strings.Repeat("}", 50_000),
		"billion laughs":     aliasBomb,
		"alias fan-out":      aliasFanOut(),
		"huge file":          "commands:\n" + strings.Repeat("  - shell: echo hello world, this is a long line\n", 120_000),
		"binary garbage":     string(garbage),
		"invalid UTF-8":      "commands:\n  - shell: \"\xff\xfe\"\n",
		"long key":           "- " + strings.Repeat("k", 1<<20) + ": x\n",
		"many unknown keys":  manyKeys.String(),
		"self merge":         "env: &e {<<: *e, A: b}\ncommands: [{shell: x}]\n",
		"merge of a list":    "x: &l [1, 2]\ncommands: [{<<: *l, shell: x}]\n",
		"recursive alias":    "commands: &c [{shell: x, foreach: {input: [a], do: *c}}]\n",
		"recursive handler":  "commands: &c [{shell: x, on_success: *c}]\n",
		"custom tags":        "commands:\n  - !!python/object:os.system {shell: x}\n",
		"tabs":               "commands:\n\t- shell: x\n",
		"numbers":            "- shell: x\n  timeout: 1e400\n  retry_config: {attempts: 99999999999999999999, jitter_factor: .nan}\n",
		"wrong types everywhere": `name: [1]
mode: {a: b}
env: [x]
secrets: 7
commands:
  - shell: {a: b}
    id: [x]
    timeout: [1s]
    env: "FOO=bar"
    working_dir: {}
    capture_output: [x]
    capture_format: 7
    when: [x]
    retry_config: "3 times"
    retryable: "no"
    circuit_breaker: [5]
    repeat: true
    on_failure: 3.5
  - "echo a bare string"
  - [shell, x]
`,
		"wrong types in MapReduce": `mode: mapreduce
setup: 7
map: {input: [a], json_path: 7, filter: {}, sort_by: [a], distinct: [], offset: -1, max_items: "many",
      item_id: {}, max_parallel: [2], agent_timeout: yes, timeout_config: 5, agent_template: "true"}
reduce: {commands: 7}
error_policy: {on_item_failure: [dlq], max_failures: "x", failure_threshold: "half", error_collection: 7,
               circuit_breaker: [], retry_config: [1]}
`,
		"empty":        "",
		"only comment": "# nothing here\n",
		"null":         "~\n",
		"two docs":     "- shell: a\n---\n- shell: b\n",
	}
}

func TestHostileInputsAreRefused(t *testing.T) {
	testkit.BoundHeap(t, 1<<30)
	for name, src := range hostileInputs() {
		t.Run(name, func(t *testing.T) {
			start := time.Now()
			_, err := Parse("h.yml", []byte(src))
			took := time.Since(start)
			var pe ParseErrors
			if !errors.As(err, &pe) || len(pe) == 0 {
				t.Fatalf("Parse = %v, want ParseErrors", err)
			}
			for _, e := range pe {
				if e.Line < 1 || e.Col < 1 || e.Msg == "" {
					t.Errorf("error without a position: %v", e)
				}
			}
			t.Logf("%d error(s) in %v, first: %v", len(pe), took.Round(time.Microsecond), pe[0])
		})
	}
}

// Merge keys work in every mapping, env included.
func TestMergeKeys(t *testing.T) {
	wf, err := Parse("m.yml", []byte(`
env: {REGION: eu}
commands:
  - shell: a
    env: &common {TIER: prod, ZONE: b}
    retry_config: &retry {attempts: 5, backoff: fixed}
  - shell: b
    env: {<<: *common, TIER: dev}
    retry_config: {<<: *retry, initial_delay: 2s}
`))
	if err != nil {
		t.Fatal(err)
	}
	s := wf.Steps[1]
	env := map[string]string{}
	for _, e := range s.Env {
		env[e.Name] = e.Value.String()
	}
	if env["TIER"] != "dev" || env["ZONE"] != "b" || len(env) != 2 {
		t.Errorf("merged env %v, want TIER=dev (explicit wins) and ZONE=b", env)
	}
	p := s.Retry[0]
	if p.Attempts != 5 || p.Backoff.Strategy != "fixed" || p.InitialDelay != 2*time.Second {
		t.Errorf("merged policy %+v", p)
	}
}
