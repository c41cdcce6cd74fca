package executor

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/runnerdev/runner/internal/eventlog"
	"github.com/runnerdev/runner/workflow"
)

// runValidated runs the one step of src in a fresh directory and returns
// its result, the directory, and the types of the events it emitted.
func runValidated(t *testing.T, src string, env ...string) (StepResult, string, []string) {
	t.Helper()
	wf, err := workflow.Parse("v.yml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	var events []string
	env = append(os.Environ(), env...)
	x := &Executor{
		Env: env, TmpDir: t.TempDir(), Stdout: io.Discard, Stderr: io.Discard,
		Emit: func(e eventlog.Event) { events = append(events, string(e.Type)) },
	}
	res := x.RunStep(t.Context(), wf.Steps[0], Run{Scope: NewScope(nil, env), Dir: dir})
	return res, dir, events
}

func read(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// progress is a check whose completion_percentage, 20 at first, grows by
// 20 with each fix that on_incomplete counts in the file "fixes".
const progress = `shell: 'echo "{\"completion_percentage\": $(( $(cat fixes 2>/dev/null || echo 0) * 20 + 20 ))}"'`

func TestValidateCompleteAtFirst(t *testing.T) {
	res, dir, events := runValidated(t, `
- shell: echo built > built
  id: build
  validate:
    shell: 'echo "{\"completion_percentage\": 100}"'
    on_incomplete:
      shell: touch fixed
`)
	if res.Status != StepSucceeded || res.Err != nil || res.Vars["steps.build"] == nil {
		t.Fatalf("%s %v %v", res.Status, res.Err, res.Vars)
	}
	if _, err := os.Stat(filepath.Join(dir, "fixed")); err == nil {
		t.Error("on_incomplete ran for a complete check")
	}
	if got := strings.Join(events, " "); got != "step_started attempt_started attempt_succeeded step_completed" {
		t.Errorf("events: %s", got)
	}
}

// Each attempt reads what the check before it found; the check runs
// again after each attempt, until it reaches the threshold.
func TestValidateCompleteAfterAttempts(t *testing.T) {
	res, dir, events := runValidated(t, `
- shell: "true"
  validate:
    `+progress+`
    threshold: 60
    on_incomplete:
      shell: 'echo "${validation.attempt_number}: ${validation.completion} ${validation.status} ${validation.missing_count}" >> log; echo $(( $(cat fixes 2>/dev/null || echo 0) + 1 )) > fixes'
      max_attempts: 5
`)
	if res.Status != StepSucceeded || res.Err != nil {
		t.Fatalf("%s %v", res.Status, res.Err)
	}
	if got, want := read(t, filepath.Join(dir, "log")), "1: 20 incomplete 0\n2: 40 incomplete 0\n"; got != want {
		t.Errorf("on_incomplete saw\n%s\nwant\n%s", got, want)
	}
	if got := strings.Count(strings.Join(events, " "), "handler_completed"); got != 2 {
		t.Errorf("%d handler_completed events, want 2: %v", got, events)
	}
}

func TestValidateIncompleteAfterAllAttempts(t *testing.T) {
	for _, tt := range []struct {
		failWorkflow string
		handled      workflow.FailureAction
		fatal        bool
	}{
		{"", "", true}, // Prodigy's default: fail_workflow: true
		{"fail_workflow: true", "", true},
		{"fail_workflow: false", workflow.FailContinue, false},
	} {
		t.Run(tt.failWorkflow, func(t *testing.T) {
			res, dir, events := runValidated(t, `
- shell: "true"
  id: impl
  validate:
    `+progress+`
    on_incomplete:
      shell: echo $(( $(cat fixes 2>/dev/null || echo 0) + 1 )) > fixes
      `+tt.failWorkflow+`
`)
			if res.Status != StepFailed || res.Handled != tt.handled || res.Fatal() != tt.fatal {
				t.Fatalf("status %s handled %q fatal %v: %v", res.Status, res.Handled, res.Fatal(), res.Err)
			}
			want := `step "impl" failed: validation incomplete: 60% complete, threshold 100%, after 2 on_incomplete attempts`
			if res.Err == nil || res.Err.Error() != want {
				t.Errorf("error %v\nwant  %s", res.Err, want)
			}
			if got := read(t, filepath.Join(dir, "fixes")); got != "2\n" {
				t.Errorf("%q fixes, want the default max_attempts 2", got)
			}
			if res.Vars["steps.impl"] == nil {
				t.Error("the command's own variables are lost")
			}
			if events[len(events)-1] != "step_failed" {
				t.Errorf("events: %v", events)
			}
		})
	}
}

// Without on_incomplete, an incomplete check fails the step at once.
func TestValidateIncompleteWithoutOnIncomplete(t *testing.T) {
	res, _, _ := runValidated(t, `
- shell: "true"
  validate:
    shell: 'echo ''{"completion_percentage": 99.5}'''
`)
	want := `step "step 1" failed: validation incomplete: 99.5% complete, threshold 100%`
	if !res.Fatal() || res.Err == nil || res.Err.Error() != want {
		t.Errorf("fatal %v, error %v\nwant %s", res.Fatal(), res.Err, want)
	}
}

// A pass/fail check (Prodigy's page runs cargo test as one) prints no
// JSON object: exiting 0 is complete, failing is 0% complete with the
// failure as what is missing, so on_incomplete runs and the check again.
func TestValidatePassFailCheck(t *testing.T) {
	for _, tt := range []struct{ name, check, want string }{
		{"passes with a log", "shell: echo all good", ""},
		{"passes silently", "shell: 'true'", ""},
		{"passes after a fix", "shell: test -e fixed", ""},
		{"fails", "shell: echo broken >&2; exit 3", `step "step 1" failed: validation incomplete: 0% complete, threshold 100%, after 2 on_incomplete attempts`},
		{"second command fails", "commands: [{shell: 'true'}, {shell: 'exit 4'}]", `validation incomplete: 0% complete`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			res, dir, _ := runValidated(t, `
- shell: "true"
  validate:
    `+tt.check+`
    on_incomplete:
      shell: 'echo "${validation.missing}" >> fixed'
`)
			switch {
			case tt.want == "" && res.Status != StepSucceeded:
				t.Fatalf("%s: %v", res.Status, res.Err)
			case tt.want != "" && (!res.Fatal() || res.Err == nil || !strings.Contains(res.Err.Error(), tt.want)):
				t.Fatalf("fatal %v, error %v\nwant %s", res.Fatal(), res.Err, tt.want)
			}
			fixes, _ := os.ReadFile(filepath.Join(dir, "fixed"))
			if tt.want != "" && !strings.Contains(string(fixes), "check command") {
				t.Errorf("on_incomplete saw %q, want the check's failure as missing", fixes)
			}
		})
	}
}

// A check whose result cannot be read fails the step, whatever
// on_incomplete says, with a message that says what is wrong.
func TestValidateBrokenCheck(t *testing.T) {
	for _, tt := range []struct{ name, validate, want string }{
		{"not JSON", "shell: echo '{all good'", `validate: the check's stdout is not JSON (`},
		{"no completion", `shell: 'echo ''{"score": 100}'''`, `validate: the check's stdout has no completion_percentage (a number from 0 to 100)`},
		{"completion a string", `shell: 'echo ''{"completion_percentage": "100"}'''`, `has no completion_percentage`},
		{"completion too high", `shell: 'echo ''{"completion_percentage": 120}'''`, `validate: the check's stdout: completion_percentage must be between 0 and 100, not 120`},
		{"no result file", "shell: 'true'\n    result_file: out.json", `validate: the check wrote no result_file `},
		{"timeout", "shell: sleep 5\n    timeout: 100ms", `validate: the check did not finish within validate.timeout (100ms)`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			res, dir, _ := runValidated(t, `
- shell: "true"
  validate:
    `+tt.validate+`
    on_incomplete:
      shell: touch fixed
      fail_workflow: false
`)
			if !res.Fatal() || res.Err == nil || !strings.Contains(res.Err.Error(), tt.want) {
				t.Errorf("fatal %v, error %v\nwant %s", res.Fatal(), res.Err, tt.want)
			}
			if _, err := os.Stat(filepath.Join(dir, "fixed")); err == nil {
				t.Error("on_incomplete ran after a broken check")
			}
		})
	}
}

// result_file is read in the step's directory; without a check command
// the step's own command is the check, and runs again after each attempt.
func TestValidateResultFileOfTheStep(t *testing.T) {
	res, dir, _ := runValidated(t, `
- shell: |
    mkdir -p sub && echo run >> sub/runs
    echo "{\"completion_percentage\": $(( $(wc -l < sub/runs) * 50 ))}" > sub/result.json
  working_dir: sub/..
  validate:
    result_file: sub/result.json
    on_incomplete:
      shell: "true"
      max_attempts: 3
`)
	if res.Status != StepSucceeded {
		t.Fatal(res.Err)
	}
	if got := read(t, filepath.Join(dir, "sub", "runs")); got != "run\nrun\n" {
		t.Errorf("the step ran %q, want twice", got)
	}
	if got := read(t, filepath.Join(dir, "sub", "result.json")); got != "{\"completion_percentage\": 100}\n" {
		t.Errorf("result_file is left as the check wrote it: %q", got)
	}
}

// ${validation.gaps} (an object) is JSON and a list of strings is joined
// by ", "; in a shell command each is one word, whatever its text holds,
// and nothing in it runs.
func TestValidateGapsInShell(t *testing.T) {
	res, dir, _ := runValidated(t, `
- shell: "true"
  validate:
    shell: |
      cat <<'EOF'
      {"completion_percentage": 10, "gaps": {"q": {"description": "it's \"$(touch pwned)\" ; rm -rf x"}},
       "missing": ["a", "b"], "incomplete_specs": ["specs/1.md"]}
      EOF
    on_incomplete:
      shell: printf '%s\n' ${validation.gaps} ${validation.missing} ${validation.incomplete_specs} > seen
      max_attempts: 1
      fail_workflow: false
`)
	if res.Handled != workflow.FailContinue {
		t.Fatal(res.Err)
	}
	want := `{"q":{"description":"it's \"$(touch pwned)\" ; rm -rf x"}}` + "\na, b\nspecs/1.md\n"
	if got := read(t, filepath.Join(dir, "seen")); got != want {
		t.Errorf("on_incomplete got\n%s\nwant\n%s", got, want)
	}
	if _, err := os.Stat(filepath.Join(dir, "pwned")); err == nil {
		t.Error("a value ran")
	}
}

// A failing on_incomplete command ends the attempts: the check does not
// run again, and the step is as incomplete as the last check said.
func TestValidateFailingFix(t *testing.T) {
	res, dir, _ := runValidated(t, `
- shell: "true"
  validate:
    shell: 'echo x >> checks; echo ''{"completion_percentage": 30}'''
    on_incomplete:
      commands:
        - shell: "true"
        - shell: echo no luck >&2; exit 2
      max_attempts: 3
`)
	want := `step "step 1" failed: validation incomplete: 30% complete, threshold 100%; on_incomplete attempt 1: command 2 failed: exit status 2: no luck`
	if !res.Fatal() || res.Err == nil || res.Err.Error() != want {
		t.Errorf("error %v\nwant  %s", res.Err, want)
	}
	if got := read(t, filepath.Join(dir, "checks")); got != "x\n" {
		t.Errorf("the check ran %q times", got)
	}
}

// commit_required on on_incomplete or on one of its commands: the attempt
// fails unless it makes a git commit.
func TestValidateCommitRequired(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	env := []string{"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com"}
	check := `shell: 'git init -q; echo "{\"completion_percentage\": $(( $(git rev-list --count HEAD 2>/dev/null || echo 0) * 50 ))}"'`
	commit := `touch f$(date +%N) && git add -A && git commit -qm fix`
	for _, tt := range []struct{ name, onIncomplete, want string }{
		{"attempt commits", "shell: " + commit + "\n      commit_required: true", ""},
		{"attempt makes none", "shell: 'true'\n      commit_required: true", "on_incomplete attempt 1: made no commit (commit_required)"},
		{"command commits", "commands:\n        - shell: " + commit + "\n          commit_required: true", ""},
		{"command makes none", "commands:\n        - shell: 'true'\n          commit_required: true", "on_incomplete attempt 1: command 1 failed: made no commit (commit_required)"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			res, _, _ := runValidated(t, `
- shell: "true"
  validate:
    `+check+`
    on_incomplete:
      `+tt.onIncomplete+`
`, env...)
			switch {
			case tt.want == "" && res.Status != StepSucceeded:
				t.Errorf("failed: %v", res.Err)
			case tt.want != "" && (res.Err == nil || !strings.HasSuffix(res.Err.Error(), tt.want)):
				t.Errorf("error %v\nwant  ...%s", res.Err, tt.want)
			}
		})
	}
}

// on_failure is for the step's command: a failed validation does not run
// it.
func TestValidateFailureIsNotOnFailure(t *testing.T) {
	res, dir, _ := runValidated(t, `
- shell: "true"
  on_failure:
    shell: touch handled
  validate:
    shell: 'echo ''{"completion_percentage": 0}'''
`)
	if !res.Fatal() {
		t.Errorf("%s %q %v", res.Status, res.Handled, res.Err)
	}
	if _, err := os.Stat(filepath.Join(dir, "handled")); err == nil {
		t.Error("on_failure ran for a failed validation")
	}
}
