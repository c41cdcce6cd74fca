package workflow

import (
	"reflect"
	"slices"
	"strings"
	"testing"
)

// Every field of Step is either one that drives the step or one whose
// key names it in a message: a field added to Step is classified.
func TestEffectFieldsClassified(t *testing.T) {
	st := reflect.TypeFor[Step]()
	for i := range st.NumField() {
		name := st.Field(i).Name
		_, named := effectKeys[name]
		if driving := slices.Contains(drivingFields, name); driving == named {
			t.Errorf("Step.%s: driving %v, named in effectKeys %v: want exactly one", name, driving, named)
		}
	}
	for name := range effectKeys {
		if _, ok := st.FieldByName(name); !ok {
			t.Errorf("effectKeys names Step.%s, which does not exist", name)
		}
	}
}

const effectStep = `
- shell: make build > out.txt
  id: build
  name: Build
  timeout: 1m
  env: {MODE: fast}
  working_dir: src
  capture_output: version
  capture_format: lines
  output_file: build.log
  when: LEVEL > 1
  retry_config: {attempts: 3, backoff: fixed, initial_delay: 1s}
  circuit_breaker: {failure_threshold: 3, timeout: 10s}
  on_success: {shell: echo ok, timeout: 5s}
  on_exit_code: {2: {shell: echo two}}
  on_failure: {shell: make clean}
  auto_commit: true
  commit_message: build ${version}
- write_file: {path: out/v.txt, content: "version=1", mode: "0600"}
  id: save
- foreach:
    foreach: [a, b]
    parallel: 2
    do:
      - shell: echo ${item}
        timeout: 3s
- shell: check
  validate: {shell: cat result.json, threshold: 90, on_incomplete: {shell: fix, max_attempts: 2}}
`

// EffectChanges names the keys of what a step does that an edit changed,
// and nothing for an edit of how runner drives it.
func TestEffectChanges(t *testing.T) {
	old := mustParse(t, effectStep)
	for _, tc := range []struct {
		name, from, to string
		step           int
		want           []string
	}{
		{"the same file", "", "", 0, nil},
		{"timeout", "timeout: 1m", "timeout: 2m", 0, nil},
		{"name", "name: Build", "name: Compile", 0, nil},
		{"retry_config", "attempts: 3", "attempts: 5", 0, nil},
		{"circuit_breaker", "failure_threshold: 3", "failure_threshold: 4", 0, nil},
		{"a handler's timeout", "timeout: 5s", "timeout: 50s", 0, nil},
		{"a do step's timeout", "timeout: 3s", "timeout: 30s", 2, nil},
		{"the command", "make build >", "make all >", 0, []string{"shell"}},
		{"the id", "id: build", "id: compile", 0, []string{"id"}},
		{"env", "MODE: fast", "MODE: slow", 0, []string{"env"}},
		{"working_dir", "working_dir: src", "working_dir: lib", 0, []string{"working_dir"}},
		{"the capture's name", "capture_output: version", "capture_output: ver", 0, []string{"capture_output"}},
		{"capture_format", "capture_format: lines", "capture_format: json", 0, []string{"capture_format"}},
		{"output_file", "build.log", "b.log", 0, []string{"output_file"}},
		{"when", "LEVEL > 1", "LEVEL > 2", 0, []string{"when"}},
		{"on_success's command", "echo ok", "echo done", 0, []string{"on_success"}},
		{"on_exit_code's", "echo two", "echo 2", 0, []string{"on_exit_code"}},
		{"on_failure", "make clean", "make distclean", 0, []string{"on_failure"}},
		{"commit settings", "auto_commit: true\n  commit_message: build ${version}", "commit_required: true", 0, []string{"commit_required", "auto_commit", "commit_message"}},
		{"write_file content", "version=1", "version=2", 1, []string{"write_file"}},
		{"write_file mode", `"0600"`, `"0644"`, 1, []string{"write_file"}},
		{"foreach parallel", "parallel: 2", "parallel: 1", 2, []string{"foreach"}},
		{"a do step's command", "echo ${item}", "echo item ${item}", 2, []string{"foreach"}},
		{"validate threshold", "threshold: 90", "threshold: 80", 3, []string{"validate"}},
		{"on_incomplete", "shell: fix", "shell: fix2", 3, []string{"validate"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			next := mustParse(t, strings.Replace(effectStep, tc.from, tc.to, 1))
			if got := old.Steps[tc.step].EffectChanges(next.Steps[tc.step]); !slices.Equal(got, tc.want) {
				t.Errorf("EffectChanges = %q, want %q", got, tc.want)
			}
		})
	}
}

func mustParse(t *testing.T, src string) *Workflow {
	t.Helper()
	wf, err := Parse("ci.yml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return wf
}
