package workflow

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/runnerdev/runner/errorpolicy"
	"github.com/runnerdev/runner/internal/breaker"
	"github.com/runnerdev/runner/retryv2"
	"github.com/runnerdev/runner/workflow/condition"
)

// parseErr parses src and returns its errors (not the warnings among
// them) as "LINE:COL: message" lines.
func parseErr(t *testing.T, name, src string) []string {
	t.Helper()
	_, err := Parse(name, []byte(src))
	if err == nil {
		return nil
	}
	var pe ParseErrors
	if !errors.As(err, &pe) {
		t.Fatalf("Parse error is %T, not ParseErrors: %v", err, err)
	}
	var out []string
	for _, e := range pe {
		if !e.Warning {
			out = append(out, strings.TrimPrefix(e.Error(), name+":"))
		}
	}
	return out
}

// A file with errors has its warnings among them, in file order, each
// marked a warning.
func TestErrorsCarryWarnings(t *testing.T) {
	_, err := Parse("w.yml", []byte("- shell: x\n  on_failure: continue\n- shel: y\n- shell: z\n  collect_metrics: true\n"))
	var pe ParseErrors
	if !errors.As(err, &pe) {
		t.Fatalf("Parse = %v", err)
	}
	want := []string{
		`w.yml:2:15: warning: on_failure: continue runs the shell command "continue"; to go on after a failure write on_failure: true`,
		`w.yml:3:3: unknown key "shel" in step commands[1] (did you mean "shell"?)`,
		`w.yml:5:3: warning: ignored: runner does not know "collect_metrics" here; Prodigy ignores it too`,
	}
	if got := strings.Split(pe.Error(), "\n"); !slices.Equal(got, want) {
		t.Errorf("problems\n  %s\nwant\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
}

func TestParseErrorsArePositioned(t *testing.T) {
	tests := []struct {
		name, src string
		want      string // "LINE:COL: substring of the message"
	}{
		{"misspelled key", "- shel: echo\n", `1:3: unknown key "shel" in step commands[0] (did you mean "shell"?)`},
		{"misspelled nested key", "- shell: x\n  retry_config:\n    atempts: 3\n", `3:5: unknown key "atempts" in retry_config (did you mean "attempts"?)`},
		{"unknown strategy lists known", "- shell: x\n  retry_config: {backoff: {zzzzzz: {}}}\n", `2:28: unknown key "zzzzzz" in retry_config.backoff (known keys: fixed, linear, exponential`},
		{"shell and claude", "- shell: x\n  claude: /fix\n", `2:3: a step runs one command: shell or claude, not both`},
		{"empty claude", "- claude: ' '\n", `1:11: claude: empty text`},
		{"commit_message without auto_commit", "- shell: x\n  commit_message: m\n", `2:3: commit_message is the message of runner's auto_commit: set auto_commit: true`},
		{"commit_required not boolean", "- shell: x\n  commit_required: yes please\n", `2:20: commit_required must be true or false`},
		{"handler shell and claude", "- shell: x\n  on_failure: {shell: a, claude: b}\n", `2:26: on_failure takes one of shell, claude or commands, not shell and claude`},
		{"agent command string", "agent: {command: claude --print}\ncommands: [{shell: x}]\n", `1:18: agent.command must be a list of words, such as [claude, --print], not "claude --print": runner runs it without a shell`},
		{"agent command empty", "agent: {command: []}\ncommands: [{shell: x}]\n", `1:18: agent.command is empty`},
		{"agent unknown key", "agent: {comand: [x]}\ncommands: [{shell: x}]\n", `1:9: unknown key "comand" in agent (did you mean "command"?)`},
		{"foreach and shell", "- shell: x\n  foreach: {foreach: [a], do: [{shell: y}]}\n", `1:3: shell does not apply to a foreach step, which runs the steps of its do: move it into do`},
		{"goal_seek", "- goal_seek: {}\n", `1:3: goal_seek (Prodigy's iterative refinement`},
		{"merge without commands", "name: x\nmerge: {}\ncommands: [{shell: x}]\n", `2:8: merge needs commands: a list of steps`},
		{"write_file without path", "- write_file: {content: x}\n", `1:15: write_file needs path: the file to write`},
		{"missing command", "- id: build\n", `1:3: step commands[0] has no command: give it shell or claude`},
		{"wrong type", "- shell: [a, b]\n", `1:10: shell must be a string, not a list`},
		{"bad duration", "- shell: x\n  timeout: 5 parsecs\n", `2:12: timeout: bad duration "5 parsecs": unknown unit "parsecs"`},
		{"negative duration", "- shell: x\n  timeout: -5s\n", `2:12: timeout: "-5s" is negative`},
		{"zero timeout", "- shell: x\n  timeout: 0\n", `2:12: timeout must be longer than zero`},
		{"attempts zero", "- shell: x\n  retry_config: {attempts: 0}\n", `2:28: retry_config.attempts must be at least 1: it counts every run including the first (1 = run once, no retry), not 0`},
		{"attempts float", "- shell: x\n  retry_config: {attempts: 1.5}\n", `2:28: attempts must be a whole number, not 1.5`},
		{"bad regex", "- shell: x\n  retry_config:\n    retry_on: [{pattern: 'a('}]\n", `3:26: retry_config.retry_on[0].pattern: invalid regular expression: missing closing )`},
		{"bad expression", "- shell: x\n  when: 'a ==  '\n", `2:15: when: invalid expression "a ==  ": unexpected end of the expression`},
		{"unknown outcome name", "- shell: x\n  retry_config:\n    retry_on: [{when: 'exit_cod == 1'}]\n", `3:24: retry_config.retry_on[0].when: invalid expression "exit_cod == 1": unknown name exit_cod`},
		{"matcher without value", "- shell: x\n  retry_config:\n    retry_on: [{pattern}]\n", `3:17: retry_config.retry_on[0].pattern needs a value`},
		{"matcher with null value", "- shell: x\n  retry_config:\n    retry_on: [{when: }, {exit_codes: ~}]\n", `3:17: retry_config.retry_on[0].when needs a value`},
		{"unknown matcher", "- shell: x\n  retry_config: {retry_on: [netwrok]}\n", `2:29: retry_config.retry_on[0] must be one of network, timeout, server_error, rate_limit, not "netwrok" (did you mean "network"?)`},
		{"fallback without command", "- shell: x\n  retry_config:\n    on_failure: {fallback: {}}\n", `3:18: retry_config.on_failure.fallback needs a command`},
		{"fallback word", "- shell: x\n  retry_config: {on_failure: fallback}\n", `2:30: retry_config.on_failure: fallback needs a command`},
		{"both on_failure forms", "- shell: x\n  retry_config: {on_failure: continue}\n  on_failure: true\n", `3:3: a step may use retry_config.on_failure or on_failure, not both`},
		{"retry and retry_config", "- shell: x\n  retry_config: {}\n  retry: {}\n", `3:3: "retry_config" and "retry" mean the same; write only one`},
		{"jitter factor range", "- shell: x\n  retry_config: {jitter_factor: 2}\n", `2:33: retry_config.jitter_factor must be between 0 and 1, not 2`},
		{"custom without delays", "- shell: x\n  retry_config: {backoff: custom}\n", `2:27: retry_config.backoff: custom needs its delays`},
		{"two strategies", "- shell: x\n  retry_config:\n    backoff: {fixed: {}, linear: {}}\n", `3:14: retry_config.backoff must name one strategy`},
		{"duplicate key", "- shell: x\n  shell: y\n", `2:3: key "shell" appears twice in step commands[0] (first at line 1)`},
		{"duplicate id", "- {shell: x, id: a}\n- {shell: y, id: a}\n", `2:18: id "a" is already used by the step at line 1`},
		{"bad id", "- {shell: x, id: 'a b'}\n", `1:18: id "a b" must start with a letter`},
		{"yaml syntax", "- shell: [x\n", `1:10: invalid YAML: did not find expected ',' or ']'`},
		{"colon in a plain value", "- shell: echo \"a: b\"\n", `1:1: invalid YAML: mapping values are not allowed in this context (a value that contains ": " must be quoted, or written as a block: shell: |)`},
		{"empty file", "", `file is empty`},
		{"two documents", "- shell: x\n---\n- shell: y\n", `2:1: a second YAML document`},
		{"scalar workflow", "hello\n", `1:1: a workflow is a list of steps or a mapping`},
		{"no commands", "name: x\n", `1:1: a standard workflow needs commands`},
		{"empty list of steps", "[]\n", `1:1: commands is empty: nothing to run`},
		{"map without mode", "map: {}\n", `1:1: "map" belongs to MapReduce workflows: add mode: mapreduce`},
		{"unknown step in a condition", "- id: my-step\n  shell: x\n- shell: y\n  when: '${steps.my-stpe.success}'\n", `4:9: when: no step has id "my-stpe" (did you mean "my-step"?)`},
		{"later step", "- shell: echo ${steps.b.output}\n- {id: b, shell: y}\n", `1:10: shell: steps.b is not set here: that step runs later (line 2)`},
		{"bad mode", "mode: mapreduse\n", `1:7: mode must be one of standard, mapreduce, not "mapreduse" (did you mean "mapreduce"?)`},
		{"repeat unbounded", "- shell: x\n  repeat: {until: 'output == \"ok\"'}\n", `2:11: repeat needs max_attempts or timeout`},
		{"capture_format alone", "- shell: x\n  capture_format: json\n", `2:3: capture_format needs capture_output`},
		{"reserved capture", "- shell: x\n  capture_output: item\n", `2:19: capture_output: "item" is reserved`},
		{"bad capture format", "- shell: x\n  capture_output: true\n  capture_format: yaml\n", `3:19: capture_format must be one of string, json, lines, number, boolean, not "yaml"`},
		{"bad placeholder filter", "- shell: echo ${x|upper}\n", `1:15: shell: unknown filter "upper" in placeholder (want raw or json)`},
		{"env not mapping", "env: [A]\ncommands: [{shell: x}]\n", `1:6: env must be a mapping of NAME: value, not a list`},
		{"bad env name", "env: {'A-B': x}\ncommands: [{shell: x}]\n", `1:7: env: "A-B" is not a valid variable name`},
		{"breaker threshold", "- shell: x\n  circuit_breaker: {failure_threshold: 0}\n", `2:40: circuit_breaker.failure_threshold must be at least 1, not 0`},
		{"alias fan-out", aliasFanOut(), `this value expands to more than 200000 values`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			errs := parseErr(t, "w.yml", tt.src)
			for _, e := range errs {
				if strings.Contains(e, tt.want) || strings.HasPrefix(tt.want, "file") && strings.Contains(e, tt.want) {
					return
				}
			}
			t.Errorf("want an error containing\n  %s\ngot\n  %s", tt.want, strings.Join(errs, "\n  "))
		})
	}
}

// aliasFanOut is a small file whose aliases make the decoder visit
// hundreds of thousands of values.
func aliasFanOut() string {
	var b strings.Builder
	b.WriteString("x: &s {shell: x, env: {")
	for i := range 100 {
		fmt.Fprintf(&b, "A%d: v, ", i)
	}
	b.WriteString("}}\ncommands: [")
	b.WriteString(strings.Repeat("*s, ", 2100))
	b.WriteString("]\n")
	return b.String()
}

// aliasBomb is the "billion laughs" attack in YAML.
const aliasBomb = `a: &a ["x","x","x","x","x","x","x","x","x"]
b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]
c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]
d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]
e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]
f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]
g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]
commands: [{shell: x, env: *g}]
`

func TestParseReportsEveryProblem(t *testing.T) {
	errs := parseErr(t, "w.yml", "- shel: x\n- shell: y\n  timeout: soon\n- shell: z\n  retry_config: {attempts: 0}\n")
	if len(errs) != 3 { // shel unknown (and so no shell: not a second error), bad timeout, attempts 0
		t.Errorf("got %d errors, want 3:\n%s", len(errs), strings.Join(errs, "\n"))
	}
}

func TestParseJSONErrorPosition(t *testing.T) {
	errs := parseErr(t, "w.json", "{\n  \"commands\": [\n    {\"shell\": \"x\",}\n  ]\n}\n")
	if len(errs) != 1 || !strings.HasPrefix(errs[0], "3:19: invalid JSON") {
		t.Errorf("got %q", errs)
	}
	errs = parseErr(t, "w.json", "{\"commands\": [{\"shell\": \"${steps.x.output}\", \"shel\": 1}]}")
	want := []string{`1:25: shell: no step has id "x"`, `1:46: unknown key "shel" in step commands[0] (did you mean "shell"?)`}
	if !slices.Equal(errs, want) {
		t.Errorf("got %q\nwant %q (in file order)", errs, want)
	}
}

func TestParseStandardFields(t *testing.T) {
	wf, err := Parse("deploy.yml", []byte(`
name: deploy
env: {REGION: eu-west-1, COUNT: 3}
secrets: [API_TOKEN]
commands:
  - name: fetch
    id: fetch
    shell: curl ${REGION}
    timeout: 1m30s
    env: {A: "${REGION}"}
    working_dir: /tmp
    capture_output: data
    capture_format: json
    capture_streams: both
    when: '${REGION} == "eu-west-1"'
    retry:
      max_attempts: 5
      backoff: {exponential: {base: 1.5}}
      initial_delay: 250ms
      max_delay: PT10S
      jitter: full
      jitter_factor: 0.5
      retry_on: [network, {exit_codes: 75}, {pattern: 'lock \d+'}, {when: 'attempt < 3'}]
      retry_budget: 1d
      retry_after: true
      on_failure: {fallback: {command: echo cached}}
    circuit_breaker: {failure_threshold: 3, timeout: 10s}
  - shell: poll
    retryable: false
    retry_config:
      - {retry_on: [rate_limit], attempts: 10, backoff: {custom: {delays: [1s, 5]}}}
      - {retry_on: [timeout], backoff: {linear: {increment: 2s}}}
    repeat: {until: 'output == "ready"', interval: 2s, max_attempts: 60, backoff: fibonacci}
    on_failure:
      commands: [echo a, {shell: echo b}]
      fail_workflow: true
`))
	if err != nil {
		t.Fatal(err)
	}
	if wf.Name != "deploy" || wf.Mode != Standard || len(wf.Env) != 2 || wf.Secrets[0] != "API_TOKEN" || len(wf.Steps) != 2 {
		t.Fatalf("workflow %+v", wf)
	}
	s := wf.Steps[0]
	p := s.Retry[0]
	switch {
	case s.Key() != "fetch", s.Timeout != 90*time.Second, s.Capture != "data", s.CaptureFormat != CaptureJSON, s.CaptureStreams != StreamBoth:
		t.Errorf("step 1 %+v", s)
	case p.Attempts != 5, p.Backoff.Strategy != retryv2.Exponential, p.Backoff.Base != 1.5, p.InitialDelay != 250*time.Millisecond,
		p.MaxDelay != 10*time.Second, p.Jitter != retryv2.FullJitter, p.JitterFactor != 0.5, len(p.RetryOn) != 4, p.Budget != 24*time.Hour, !p.RetryAfter:
		t.Errorf("policy %+v", p)
	case p.RetryOn[1].Source != "exit_codes [75]" || p.RetryOn[2].Source != `pattern "lock \d+"`:
		t.Errorf("matcher sources %q %q", p.RetryOn[1].Source, p.RetryOn[2].Source)
	case s.OnFailure.Action != FailFallback || s.OnFailure.Commands[0].Text.String() != "echo cached":
		t.Errorf("on_failure %+v", s.OnFailure)
	case *s.Breaker != breaker.Config{FailureThreshold: 3, SuccessThreshold: 1, Timeout: 10 * time.Second, HalfOpenRequests: 1}:
		t.Errorf("breaker %+v", s.Breaker)
	}
	ok, err := s.When.Bool(map[string]any{"REGION": "eu-west-1"})
	if err != nil || !ok {
		t.Errorf("when with ${REGION}: %v %v", ok, err)
	}
	s = wf.Steps[1]
	switch {
	case s.Key() != "step-2", s.Retryable, len(s.Retry) != 2:
		t.Errorf("step 2 %+v", s)
	case s.Retry[0].Backoff.Strategy != retryv2.Custom || s.Retry[0].Backoff.Delays[1] != 5*time.Second:
		t.Errorf("custom backoff %+v", s.Retry[0].Backoff)
	case s.Retry[1].Attempts != retryv2.DefaultAttempts || s.Retry[1].Backoff.Increment != 2*time.Second:
		t.Errorf("linear policy %+v", s.Retry[1])
	case s.Repeat.MaxAttempts != 60 || s.Repeat.Interval != 2*time.Second || s.Repeat.Backoff.Strategy != retryv2.Fibonacci:
		t.Errorf("repeat %+v", s.Repeat)
	case s.OnFailure.Action != FailHandler || len(s.OnFailure.Commands) != 2 || !s.OnFailure.FailWorkflow:
		t.Errorf("on_failure %+v", s.OnFailure)
	}
}

func TestParseMapReduce(t *testing.T) {
	wf, err := Parse("resize.yml", []byte(`
name: resize
mode: mapreduce
setup: {commands: [{shell: ./list > items.json}]}
map:
  input: items.json
  json_path: "$.items[*]"
  filter: "item.size > 0"
  sort_by: "size DESC NULLS FIRST, name"
  distinct: id
  offset: 2
  max_items: 100
  item_id: "${item.id}"
  max_parallel: $WORKERS
  timeout_config: {agent_timeout_secs: 30}
  agent_template:
    - shell: convert ${item.path}
reduce:
  - shell: echo ${map.successful}
max_failures: 10
error_policy:
  on_item_failure: retry
  failure_threshold: 0.25
  error_collection: {batched: {size: 5}}
  circuit_breaker: {failure_threshold: 2}
  retry_config: {max_attempts: 4, backoff: fixed}
`))
	if err != nil {
		t.Fatal(err)
	}
	m := wf.Map
	switch {
	case wf.Mode != MapReduce || len(wf.Setup) != 1 || len(wf.Reduce) != 1:
		t.Errorf("workflow %+v", wf)
	case m.JSONPath != "$.items[*]" || m.Filter == nil || m.Distinct != "id" || m.Offset != 2 || m.MaxItems != 100:
		t.Errorf("map %+v", m)
	case len(m.SortBy) != 2 || m.SortBy[0] != (SortKey{Field: "size", Desc: true, NullsFirst: true}) || m.SortBy[1] != (SortKey{Field: "name"}):
		t.Errorf("sort_by %+v", m.SortBy)
	case m.MaxParallel != "$WORKERS" || m.AgentTimeout != 30*time.Second || len(m.Template) != 1:
		t.Errorf("map %+v", m)
	}
	ep := wf.ErrorPolicy
	want := errorpolicy.Policy{
		OnItemFailure: errorpolicy.Retry, ContinueOnFailure: true, MaxFailures: 10, FailureThreshold: 0.25, MinItems: 10,
		Collection: errorpolicy.Collection{Mode: "batched", BatchSize: 5},
		Breaker:    &breaker.Config{FailureThreshold: 2, SuccessThreshold: 3, Timeout: 30 * time.Second, HalfOpenRequests: 3},
	}
	if ep.Breaker == nil || *ep.Breaker != *want.Breaker {
		t.Errorf("breaker %+v", ep.Breaker)
	}
	ep.Breaker, want.Breaker = nil, nil
	if ep != want {
		t.Errorf("error policy\n got %+v\nwant %+v", ep, want)
	}
	if wf.ItemRetry == nil || wf.ItemRetry.Attempts != 4 || wf.ItemRetry.Backoff.Strategy != retryv2.Fixed {
		t.Errorf("item retry %+v", wf.ItemRetry)
	}
}

// map.isolation is worktree when the file says so, or by default when an
// agent template step is a claude: step or has commit_required; map.merge:
// none keeps the branches.
func TestParseIsolation(t *testing.T) {
	tests := []struct {
		name, mapKeys, step string
		want                Isolation
		set, noMerge        bool
	}{
		{"shell steps", "", "{shell: x}", IsolationNone, false, false},
		{"auto_commit alone", "", "{shell: x, auto_commit: true}", IsolationNone, false, false},
		{"a claude: step", "", "{claude: /fix}", IsolationWorktree, false, false},
		{"commit_required", "", "{shell: x, commit_required: true}", IsolationWorktree, false, false},
		{"none overrides the default", "isolation: none, ", "{claude: /fix}", IsolationNone, true, false},
		{"worktree for shell steps", "isolation: worktree, merge: none, ", "{shell: x}", IsolationWorktree, true, true},
		{"merge: merge", "isolation: worktree, merge: merge, ", "{shell: x}", IsolationWorktree, true, false},
	}
	for _, tt := range tests {
		wf, err := Parse("m.yml", []byte("mode: mapreduce\nmap: {input: x, "+tt.mapKeys+"agent_template: ["+tt.step+"]}\n"))
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if m := wf.Map; m.Isolation != tt.want || m.IsolationSet != tt.set || m.NoMerge != tt.noMerge {
			t.Errorf("%s: isolation %q (set %v, no merge %v), want %q (set %v, no merge %v)", tt.name, m.Isolation, m.IsolationSet, m.NoMerge, tt.want, tt.set, tt.noMerge)
		}
	}
}

// merge: is a list of steps or {commands, timeout}; its steps read the
// steps of setup and reduce, which run before it; merge_back is a boolean.
func TestParseMerge(t *testing.T) {
	const head = "mode: mapreduce\nsetup: [{shell: x, id: s}]\nmap: {input: x, agent_template: [{claude: /fix}]}\nreduce: [{shell: x, id: r}]\n"
	tests := []struct {
		name, src string
		steps     int
		timeout   time.Duration
		back      bool
	}{
		{"list", "merge: [{shell: '${steps.s.output}'}, {claude: '/merge ${merge.source_branch} ${steps.r.output}'}]\n", 2, 0, false},
		{"commands and timeout", "merge: {commands: [{shell: x}], timeout: 600}\nmerge_back: true\n", 1, 600 * time.Second, true},
		{"commands alone", "merge: {commands: [{shell: x}]}\nmerge_back: false\n", 1, 0, false},
	}
	for _, tt := range tests {
		wf, err := Parse("m.yml", []byte(head+tt.src))
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if m := wf.Merge; len(m.Steps) != tt.steps || m.Timeout != tt.timeout || wf.MergeBack != tt.back {
			t.Errorf("%s: %d steps, timeout %v, merge_back %v; want %d, %v, %v", tt.name, len(m.Steps), m.Timeout, wf.MergeBack, tt.steps, tt.timeout, tt.back)
		}
	}
	wf, err := Parse("m.yml", []byte(head))
	if err != nil || wf.Merge != nil || wf.MergeBack {
		t.Errorf("without merge: %+v, %v", wf, err)
	}
}

// A standard workflow with merge: or merge_back: true runs in a worktree
// on a job branch; its merge steps read its commands' steps, which run
// before them. So does one with a claude: step or commit_required
// anywhere (SPEC §12.7), unless isolation: none says otherwise. A
// shell-only one runs in the checkout, as a MapReduce workflow whose map
// has no isolation does.
func TestStandardMerge(t *testing.T) {
	tests := []struct {
		name, src string
		steps     int
		worktree  bool
	}{
		{"merge block", "commands: [{shell: x, id: c}]\nmerge: [{claude: '/merge ${merge.source_branch} ${steps.c.output}'}]\n", 1, true},
		{"merge_back", "commands: [{shell: x}]\nmerge_back: true\n", 0, true},
		{"merge_back false", "commands: [{shell: x}]\nmerge_back: false\n", 0, false},
		{"neither", "commands: [{shell: x}]\n", 0, false},
		{"claude step", "commands: [{claude: /fix}]\n", 0, true},
		{"commit_required", "commands: [{shell: x, commit_required: true}]\n", 0, true},
		{"claude handler", "commands: [{shell: x, on_failure: {claude: /fix}}]\n", 0, true},
		{"claude in on_success", "commands: [{shell: x, on_success: {claude: /fix}}]\n", 0, true},
		{"claude in foreach", "commands: [{foreach: {foreach: [a], do: [{claude: /fix}]}}]\n", 0, true},
		{"bare list", "- claude: /fix\n", 0, true},
		{"isolation none", "isolation: none\ncommands: [{claude: /fix}]\n", 0, false},
		{"isolation worktree, shell only", "isolation: worktree\ncommands: [{shell: x}]\n", 0, true},
		{"mapreduce with isolation", "mode: mapreduce\nmap: {input: x, agent_template: [{claude: /fix}]}\n", 0, true},
		{"mapreduce without isolation", "mode: mapreduce\nmap: {input: x, agent_template: [{shell: x}]}\n", 0, false},
	}
	for _, tt := range tests {
		wf, err := Parse("m.yml", []byte(tt.src))
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		steps := 0
		if wf.Merge != nil {
			steps = len(wf.Merge.Steps)
		}
		if steps != tt.steps || wf.RunsInWorktree() != tt.worktree {
			t.Errorf("%s: %d merge steps, runs in a worktree %v; want %d, %v", tt.name, steps, wf.RunsInWorktree(), tt.steps, tt.worktree)
		}
	}
}

func TestParseMapReduceErrors(t *testing.T) {
	tests := []struct{ src, want string }{
		{"mode: mapreduce\n", `1:1: a MapReduce workflow needs map`},
		{"mode: mapreduce\nmap: {agent_template: [{shell: x}]}\n", `2:6: map needs input`},
		{"mode: mapreduce\nmap: {input: x}\n", `2:6: map needs agent_template`},
		{"mode: mapreduce\nmap: {input: x, json_path: '$[', agent_template: [{shell: x}]}\n", `2:28: map.json_path: invalid JSONPath "$["`},
		{"mode: mapreduce\nmap: {input: x, sort_by: 'a SIDEWAYS', agent_template: [{shell: x}]}\n", `2:26: map.sort_by: "a SIDEWAYS" is not FIELD`},
		{"mode: mapreduce\nmap: {input: x, max_parallel: 0, agent_template: [{shell: x}]}\n", `2:31: map.max_parallel must be at least 1, not 0`},
		{"mode: mapreduce\nmap: {input: x, max_parallel: many, agent_template: [{shell: x}]}\n", `2:31: map.max_parallel must be a number or a variable`},
		{"mode: mapreduce\nmap: {input: x, agent_timeout: 5s, agent_timeout_secs: 5, agent_template: [{shell: x}]}\n", `2:36: map.agent_timeout and map.agent_timeout_secs both set`},
		{"mode: mapreduce\nmap: {input: x, agent_template: [{shell: x}]}\nmax_failures: 1\nerror_policy: {max_failures: 2}\n", `3:1: max_failures is set both here and in error_policy`},
		{"mode: mapreduce\nmap: {input: x, agent_template: [{shell: x}]}\non_item_failure: requeue\n", `3:18: on_item_failure must be one of dlq, retry, skip, stop`},
		{"mode: mapreduce\nmap: {input: x, agent_template: [{shell: x}]}\nerror_policy: {retry_config: {max_atempts: 2}}\n", `3:31: unknown key "max_atempts" in error_policy.retry_config (did you mean "max_attempts"?)`},
		{"mode: mapreduce\nmap: {input: x, agent_template: [{shell: x}]}\nerror_collection: batched\n", `3:19: error_collection: batched needs a size`},
		{"mode: mapreduce\nmap: {input: x, agent_template: [{shell: x}]}\nfailure_threshold: 0\n", `3:20: failure_threshold must be above 0`},
		{"mode: mapreduce\nmap: {input: x, isolation: worktrees, agent_template: [{shell: x}]}\n", `2:28: map.isolation must be one of none, worktree, not "worktrees" (did you mean "worktree"?)`},
		{"mode: mapreduce\nmap: {input: x, merge: false, agent_template: [{shell: x}]}\n", `2:24: map.merge must be one of merge, none, not "false"`},
		{"mode: mapreduce\nmap: {input: x, merge: never, agent_template: [{shell: x}]}\n", `2:24: map.merge must be one of merge, none, not "never"`},
		{"mode: mapreduce\nmap: {input: x, isolation: none, agent_template: [{shell: x}]}\nmerge: [{shell: x}]\n", `3:1: merge acts on the job branch, which only a map with isolation: worktree has (this one runs with isolation: none); set map.isolation: worktree or remove merge`},
		{"mode: mapreduce\nmap: {input: x, isolation: none, agent_template: [{shell: x}]}\nmerge_back: true\n", `3:1: merge_back: true acts on the job branch`},
		{"mode: mapreduce\nmap: {input: x, agent_template: [{claude: x}]}\nmerge_back: yes please\n", `3:13: merge_back must be true or false`},
		{"mode: mapreduce\nmap: {input: x, agent_template: [{claude: x}]}\nmerge: {timeout: 600}\n", `3:8: merge needs commands: a list of steps`},
		{"mode: mapreduce\nmap: {input: x, agent_template: [{claude: x}]}\nmerge: {commands: [{shell: x}], timeout: 0}\n", `3:42: merge.timeout must be longer than zero`},
		{"mode: mapreduce\nmap: {input: x, agent_template: [{claude: x}]}\nmerge: {commands: [{shell: x}], timout: 9}\n", `3:33: unknown key "timout" in merge (did you mean "timeout"?)`},
		{"mode: mapreduce\nmap: {input: x, agent_template: [{claude: x}]}\nmerge: []\n", `3:8: merge is empty: nothing to run`},
		{"mode: mapreduce\nmap: {input: x, agent_template: [{claude: x}]}\nmerge: [{shell: x, id: m}]\nreduce: [{shell: '${steps.m.output}'}]\n", `4:18: shell: steps.m is not set here: merge runs after reduce (line 3)`},
		{"commands: [{shell: '${steps.m.output}'}]\nmerge: [{shell: x, id: m}]\n", `1:20: shell: steps.m is not set here: merge runs after commands (line 2)`},
	}
	for _, tt := range tests {
		errs := parseErr(t, "m.yml", tt.src)
		found := false
		for _, e := range errs {
			found = found || strings.Contains(e, tt.want)
		}
		if !found {
			t.Errorf("%q:\nwant %s\n got %s", tt.src, tt.want, strings.Join(errs, "\n     "))
		}
	}
}

func TestParseDuration(t *testing.T) {
	good := map[string]time.Duration{
		"250ms": 250 * time.Millisecond, "2s": 2 * time.Second, "1m30s": 90 * time.Second, "1h": time.Hour,
		"1d": 24 * time.Hour, "2h 30m": 150 * time.Minute, "5 minutes": 5 * time.Minute, "30": 30 * time.Second,
		"1.5": 1500 * time.Millisecond, "PT30S": 30 * time.Second, "P1DT2H": 26 * time.Hour, "pt0.5s": 500 * time.Millisecond,
		"0": 0, "1w": 7 * 24 * time.Hour,
	}
	for in, want := range good {
		if got, err := ParseDuration(in); err != nil || got != want {
			t.Errorf("ParseDuration(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "soon", "5x", "-1s", "P", "PT", "P1Y", "1e400s", "99999999999d", "1.2.3s", "s"} {
		if got, err := ParseDuration(bad); err == nil {
			t.Errorf("ParseDuration(%q) = %v, want an error", bad, got)
		}
	}
}

func TestSuggest(t *testing.T) {
	for in, want := range map[string]string{"shel": "shell", "retry_confg": "retry_config", "captur_output": "capture_output", "TIMEOUT": "timeout", "xyzzy": ""} {
		if got := Suggest(in, stepKeys); got != want {
			t.Errorf("Suggest(%q) = %q, want %q", in, got, want)
		}
	}
}

// Every example and Prodigy compatibility file in the repository parses.
func TestExamplesParse(t *testing.T) {
	files, _ := filepath.Glob("../examples/*.yml")
	more, _ := filepath.Glob("../testdata/workflows/*.yml")
	files = append(files, more...)
	if len(files) == 0 {
		t.Fatal("no example files found")
	}
	for _, f := range files {
		if _, err := Load(f); err != nil {
			t.Errorf("%v", err)
		}
	}
}

// FuzzParse: any input gives a workflow or ParseErrors, never a panic.
func FuzzParse(f *testing.F) {
	seeds, _ := filepath.Glob("../examples/*.yml")
	for _, s := range seeds {
		data, _ := os.ReadFile(s)
		f.Add(data)
	}
	f.Add([]byte(aliasBomb))
	f.Add([]byte("- shell: x\n  retry_config: [{attempts: 2, backoff: {custom: {delays: [1s]}}}]\n"))
	f.Add([]byte("mode: mapreduce\nmap: {input: x, agent_template: [{shell: x}]}\n"))
	f.Add([]byte("{\"commands\": [{\"shell\": \"x\"}]}"))
	f.Add([]byte("a: &a [*a]\n"))
	f.Add([]byte("<<: {name: x}\ncommands: [{shell: x}]\n"))
	f.Fuzz(func(t *testing.T, src []byte) {
		wf, err := Parse("f.yml", src)
		if err == nil && wf == nil {
			t.Fatal("nil workflow without error")
		}
		var pe ParseErrors
		if err != nil && !errors.As(err, &pe) {
			t.Fatalf("error %T: %v", err, err)
		}
	})
}

// BenchmarkParse parses the release example.
func BenchmarkParse(b *testing.B) {
	src, err := os.ReadFile("../examples/release.yml")
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse("release.yml", src); err != nil {
			b.Fatal(err)
		}
	}
}

// A nil node, which callers are meant never to pass, is reported rather
// than dereferenced.
func TestResolveNilIsAnError(t *testing.T) {
	d := &decoder{file: "f.yml"}
	if n := d.resolve(nil); n != nil || len(d.errs) != 1 {
		t.Fatalf("resolve(nil) = %v with errors %v, want nil and one error", n, d.errs)
	}
}

// A placeholder inside a quoted string in a condition reads the variable,
// as in the shell, instead of staying the literal text "${VAR}".
func TestExprQuotedPlaceholder(t *testing.T) {
	vars := map[string]any{"VAR": "yes", "N": 7, "steps": map[string]any{"my-step": map[string]any{"output": "ok"}}}
	for _, tc := range []struct {
		src  string
		want bool
	}{
		{`"${VAR}" == "yes"`, true},
		{`'${VAR}' == 'yes'`, true},
		{`"x-${VAR}-${N}" == "x-yes-7"`, true},
		{`"${NOPE}" == ""`, true},
		{`"${NOPE}" == "yes"`, false},
		{`"${NOPE:-d}" == "d"`, true},
		{`"${steps.my-step.output}" == "ok"`, true},
		{`"say \"${VAR}\"" == 'say "yes"'`, true},
		{`"${VAR}" == "${VAR}"`, true},
		{`"$" + '{VAR}' == "${" + "VAR}"`, true},
	} {
		d := &decoder{file: "f.yml"}
		e := d.compileExpr(&yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: tc.src, Line: 1, Column: 1}, "when", nil)
		if e == nil {
			t.Fatalf("%s: %v", tc.src, d.errs)
		}
		got, err := e.Bool(vars)
		if err != nil || got != tc.want {
			t.Errorf("%s = %v, %v; want %v (expr %s)", tc.src, got, err, tc.want, condition.Translate(tc.src))
		}
	}
}

// claude: steps, the agent key, handlers of either kind and the commit
// fields are read into the step, in every phase.
func TestParseClaudeAndCommits(t *testing.T) {
	wf, err := Parse("agents.yml", []byte(`
mode: mapreduce
agent:
  command: [my-agent, --print, --model, x]
  env: {AGENT_MODE: review}
setup:
  - claude: /plan
    capture_output: true
map:
  input: items.json
  agent_template:
    - claude: "/fix ${item.path}"
      id: fix
      commit_required: true
      on_failure:
        claude: /debug
    - shell: git status
      auto_commit: true
      commit_message: "fix ${item.path}"
      on_failure:
        commands: [{claude: /a}, {shell: b}, c]
reduce:
  - shell: echo ${map.successful}
    capture_output: true
`))
	if err != nil {
		t.Fatal(err)
	}
	if a := wf.Agent; a == nil || !slices.Equal(a.Command, []string{"my-agent", "--print", "--model", "x"}) || len(a.Env) != 1 || a.Env[0].Name != "AGENT_MODE" {
		t.Errorf("agent %+v", wf.Agent)
	}
	kinds := func(cmds []Command) (out []CommandKind) {
		for _, c := range cmds {
			out = append(out, c.Kind)
		}
		return out
	}
	plan, fix, commit, reduce := wf.Setup[0], wf.Map.Template[0], wf.Map.Template[1], wf.Reduce[0]
	switch {
	case plan.Command.Kind != ClaudeCommand || plan.Capture != "claude.output" || plan.Label(PhaseSetup) != "setup step 1":
		t.Errorf("setup step %+v", plan)
	case fix.Command.Kind != ClaudeCommand || fix.Command.Text.String() != "/fix ${item.path}" || !fix.CommitRequired || fix.AutoCommit || !fix.TracksCommits():
		t.Errorf("claude step %+v", fix)
	case !slices.Equal(kinds(fix.OnFailure.Commands), []CommandKind{ClaudeCommand}):
		t.Errorf("claude handler %+v", fix.OnFailure)
	case commit.Command.Kind != ShellCommand || commit.CommitRequired || !commit.AutoCommit || commit.CommitMessage.String() != "fix ${item.path}":
		t.Errorf("auto_commit step %+v", commit)
	case !slices.Equal(kinds(commit.OnFailure.Commands), []CommandKind{ClaudeCommand, ShellCommand, ShellCommand}):
		t.Errorf("mixed handlers %+v", commit.OnFailure)
	case reduce.Capture != "shell.output" || reduce.TracksCommits():
		t.Errorf("reduce step %+v", reduce)
	}
}

// isolation: is a standard workflow's; in a MapReduce file it belongs
// under map:, and isolation: none leaves merge: and merge_back: without a
// job branch.
func TestStandardIsolationErrors(t *testing.T) {
	tests := []struct{ src, want string }{
		{"isolation: nonee\ncommands: [{claude: /x}]\n", `1:12: isolation must be one of none, worktree, not "nonee" (did you mean "none"?)`},
		{"isolation: none\nmerge_back: true\ncommands: [{claude: /x}]\n", "1:1: isolation: none runs the commands in your checkout, without the job branch"},
		{"mode: mapreduce\nisolation: none\nmap: {input: x, agent_template: [{shell: x}]}\n", "2:1: a MapReduce workflow's items run where map.isolation says: move isolation under map:"},
	}
	for _, tt := range tests {
		_, err := Parse("m.yml", []byte(tt.src))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%q: %v; want %s", tt.src, err, tt.want)
		}
	}
}
