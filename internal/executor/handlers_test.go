package executor

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/runnerdev/runner/internal/eventlog"
	"github.com/runnerdev/runner/workflow"
)

// runFirstStep runs the first step of src in a fresh directory and returns
// its result, the events it emitted as "type step" lines, and the
// directory.
func runFirstStep(t *testing.T, ctx context.Context, src string) (StepResult, []string, string) {
	t.Helper()
	wf, err := workflow.Parse("h.yml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	dir, tmp := t.TempDir(), t.TempDir()
	var events []string
	x := &Executor{
		Env:    os.Environ(),
		TmpDir: tmp,
		Emit: func(e eventlog.Event) {
			line := string(e.Type) + " " + e.Str("step")
			if h := e.Str("handled"); h != "" {
				line += " handled=" + h
			}
			events = append(events, line)
		},
	}
	res := x.RunStep(ctx, wf.Steps[0], Run{Scope: NewScope(nil, os.Environ()), Dir: dir})
	if left, _ := os.ReadDir(tmp); len(left) > 0 {
		t.Errorf("files left in the temp dir: %v", left)
	}
	return res, slices.DeleteFunc(events, func(e string) bool { return strings.HasPrefix(e, "attempt_") }), dir
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// The fix loop: the handler runs after each failed run, with the failed
// run's output in ${shell.output}, and the step runs again until it
// passes.
func TestFixLoopRerunsUntilTheStepPasses(t *testing.T) {
	res, events, dir := runFirstStep(t, t.Context(), `
- id: test
  shell: |
    fixes=$(cat fixes 2>/dev/null | wc -l)
    echo "run $fixes"
    [ "$fixes" -ge 2 ] || { echo "1 test failed" >&2; exit 3; }
  on_failure:
    shell: 'printf "%s|exit %s\n" "${shell.output}" "${error.exit_code}" >> log; echo fix >> fixes'
    max_attempts: 3
`)
	if res.Status != StepSucceeded || res.Fatal() || res.Err != nil {
		t.Fatalf("result %s, err %v", res.Status, res.Err)
	}
	if got := res.Vars["steps.test"].(map[string]any)["output"]; got != "run 2" {
		t.Errorf("the step's output is %q, want the passing run's", got)
	}
	want := "STDOUT:\nrun 0\n\nSTDERR:\n1 test failed|exit 3\nSTDOUT:\nrun 1\n\nSTDERR:\n1 test failed|exit 3\n"
	if got := readFile(t, filepath.Join(dir, "log")); got != want {
		t.Errorf("the handler read\n%q\nwant\n%q", got, want)
	}
	wantEvents := []string{
		"step_started test", "step_failed test handled=handler", "handler_completed test",
		"step_started test", "step_failed test handled=handler", "handler_completed test",
		"step_started test", "step_completed test",
	}
	if !slices.Equal(events, wantEvents) {
		t.Errorf("events\n%q\nwant\n%q", events, wantEvents)
	}
}

// max_attempts counts runs of the step, the first included: the handler
// runs after each failed run but the last. When the last run fails the
// step fails; the workflow goes on unless fail_workflow: true.
func TestFixLoopGivesUp(t *testing.T) {
	for _, tt := range []struct {
		failWorkflow string
		fatal        bool
	}{{"false", false}, {"true", true}} {
		t.Run("fail_workflow "+tt.failWorkflow, func(t *testing.T) {
			res, events, dir := runFirstStep(t, t.Context(), `
- shell: echo run >> runs; exit 1
  on_failure:
    shell: echo fix >> fixes
    max_attempts: 3
    fail_workflow: `+tt.failWorkflow+`
`)
			if res.Status != StepFailed || res.Fatal() != tt.fatal {
				t.Errorf("result %s, fatal %v, want failed, fatal %v", res.Status, res.Fatal(), tt.fatal)
			}
			if !strings.Contains(res.Err.Error(), "(still failing after 3 runs; its on_failure handler ran 2 times)") {
				t.Errorf("error %v", res.Err)
			}
			if runs, fixes := readFile(t, filepath.Join(dir, "runs")), readFile(t, filepath.Join(dir, "fixes")); runs != "run\nrun\nrun\n" || fixes != "fix\nfix\n" {
				t.Errorf("runs %q, fixes %q: want 3 runs and 2 fixes", runs, fixes)
			}
			last := events[len(events)-1]
			if want := "step_failed step 1 handled=handler"; tt.fatal && last == want || !tt.fatal && last != want {
				t.Errorf("last event %q (fail_workflow: %s)", last, tt.failWorkflow)
			}
		})
	}
}

// max_attempts: 1 is one run and no handler: the failure is handled as
// the handler's would be, by fail_workflow.
func TestFixLoopOneAttempt(t *testing.T) {
	res, events, dir := runFirstStep(t, t.Context(), `
- shell: echo run >> runs; exit 1
  on_failure: {shell: echo fix >> fixes, max_attempts: 1}
`)
	if res.Status != StepFailed || res.Fatal() || !strings.Contains(res.Err.Error(), "(on_failure max_attempts is 1: no run of its handler, no re-run)") {
		t.Errorf("result %s, fatal %v, err %v", res.Status, res.Fatal(), res.Err)
	}
	if runs := readFile(t, filepath.Join(dir, "runs")); runs != "run\n" {
		t.Errorf("runs %q, want 1", runs)
	}
	if _, err := os.Stat(filepath.Join(dir, "fixes")); err == nil {
		t.Error("the handler ran")
	}
	if want := []string{"step_started step 1", "step_failed step 1 handled=handler"}; !slices.Equal(events, want) {
		t.Errorf("events\n%q\nwant\n%q", events, want)
	}
}

// A failed output longer than 10,000 bytes reaches the handler as the path
// of a file holding it, removed once the handler ran (runFirstStep checks
// the temp dir is empty).
func TestFixLoopLongOutputIsAFile(t *testing.T) {
	_, _, dir := runFirstStep(t, t.Context(), `
- shell: head -c 20000 /dev/zero | tr '\0' x; exit 1
  on_failure:
    shell: 'cp "${shell.output}" seen'
    max_attempts: 2
`)
	seen := readFile(t, filepath.Join(dir, "seen"))
	if !strings.HasPrefix(seen, "STDOUT:\nxxx") || !strings.HasSuffix(seen, "x\n\nSTDERR:\n") || len(seen) != 20000+len("STDOUT:\n\n\nSTDERR:\n") {
		t.Errorf("the file holds %d bytes: %.20q...", len(seen), seen)
	}
}

// A handler that fails does not end the loop (Prodigy's "continuing with
// retry"), nor does one with commit_required that makes no commit (there
// is no repository here): the step runs max_attempts times. A handler that
// runs once, without max_attempts, and fails still stops the workflow.
func TestFixLoopHandlerFails(t *testing.T) {
	for name, handler := range map[string]string{
		"exit":            "{shell: 'echo run >> runs; exit 9', max_attempts: 3}",
		"commit_required": "{shell: 'echo run >> runs', max_attempts: 3, commit_required: true}",
	} {
		t.Run(name, func(t *testing.T) {
			res, _, dir := runFirstStep(t, t.Context(), "- shell: echo run >> runs; exit 1\n  on_failure: "+handler+"\n")
			if res.Fatal() || !strings.Contains(res.Err.Error(), "(still failing after 3 runs; its on_failure handler ran 2 times and failed each time)") {
				t.Errorf("fatal %v, err %v", res.Fatal(), res.Err)
			}
			// The step and the "exit" handler write the same file: 3 + 2
			// lines; the commit_required handler fails before its command.
			want := map[string]string{"exit": "run\nrun\nrun\nrun\nrun\n", "commit_required": "run\nrun\nrun\n"}[name]
			if runs := readFile(t, filepath.Join(dir, "runs")); runs != want {
				t.Errorf("runs %q, want %q", runs, want)
			}
		})
	}
	res, _, dir := runFirstStep(t, t.Context(), "- shell: echo run >> runs; exit 1\n  on_failure: {shell: 'exit 9'}\n")
	if !res.Fatal() || !strings.Contains(res.Err.Error(), "on_failure handler failed") {
		t.Errorf("a handler run once that fails: fatal %v, err %v", res.Fatal(), res.Err)
	}
	if runs := readFile(t, filepath.Join(dir, "runs")); runs != "run\n" {
		t.Errorf("runs %q: the step ran again after its handler failed", runs)
	}
}

// The handler's on_success runs after each run of the handler, as part of
// it: when it fails, the handler failed.
func TestFixLoopHandlerOnSuccess(t *testing.T) {
	res, _, dir := runFirstStep(t, t.Context(), `
- shell: echo run >> runs; test -f fixed
  on_failure:
    shell: echo fix >> fixes
    max_attempts: 2
    on_success: touch fixed
`)
	if res.Status != StepSucceeded {
		t.Errorf("result %s: %v", res.Status, res.Err)
	}
	if runs, fixes := readFile(t, filepath.Join(dir, "runs")), readFile(t, filepath.Join(dir, "fixes")); runs != "run\nrun\n" || fixes != "fix\n" {
		t.Errorf("runs %q, fixes %q: want 2 runs and 1 fix", runs, fixes)
	}
	res, _, _ = runFirstStep(t, t.Context(), "- shell: exit 1\n  on_failure: {shell: 'true', on_success: 'exit 6'}\n")
	if !res.Fatal() || !strings.Contains(res.Err.Error(), "on_failure's on_success handler failed") {
		t.Errorf("fatal %v, err %v", res.Fatal(), res.Err)
	}
}

// An interrupt ends the loop unhandled: resume runs the step again.
func TestFixLoopInterrupted(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	wf, err := workflow.Parse("h.yml", []byte("- shell: exit 1\n  on_failure: {shell: 'true', max_attempts: 5}\n"))
	if err != nil {
		t.Fatal(err)
	}
	handlers := 0
	x := &Executor{Env: os.Environ(), TmpDir: t.TempDir(), Emit: func(e eventlog.Event) {
		if e.Type == eventlog.TypeHandlerCompleted {
			if handlers++; handlers == 2 {
				cancel()
			}
		}
	}}
	res := x.RunStep(ctx, wf.Steps[0], Run{Scope: NewScope(nil, os.Environ()), Dir: t.TempDir()})
	if !res.Fatal() || handlers != 2 {
		t.Errorf("fatal %v after %d handler runs, want an unhandled failure after 2", res.Fatal(), handlers)
	}
}

// on_success runs after a success only, in the step's scope; the
// variables its steps set are the step's, and a handled failure of one of
// them is listed with the step's result.
func TestOnSuccess(t *testing.T) {
	res, events, dir := runFirstStep(t, t.Context(), `
- id: build
  shell: echo built
  on_success:
    - echo "after ${steps.build.output}" > after
    - {id: notify, shell: echo notified}
    - {shell: exit 4, on_failure: true}
`)
	if res.Status != StepSucceeded || res.Err == nil || !strings.Contains(res.Err.Error(), "exit status 4") {
		t.Fatalf("result %s, err %v: want success with the handled failure", res.Status, res.Err)
	}
	if got := readFile(t, filepath.Join(dir, "after")); got != "after built\n" {
		t.Errorf("on_success read %q", got)
	}
	if _, ok := res.Vars["steps.notify"]; !ok {
		t.Errorf("the handler step's variables are not the step's: %v", res.Vars)
	}
	want := []string{
		"step_started build",
		"step_started build.on_success[0]", "step_completed build.on_success[0]",
		"step_started notify", "step_completed notify",
		"step_started build.on_success[2]", "step_failed build.on_success[2] handled=continue",
		"step_completed build",
	}
	if !slices.Equal(events, want) {
		t.Errorf("events\n%q\nwant\n%q", events, want)
	}

	res, _, dir = runFirstStep(t, t.Context(), "- shell: exit 1\n  on_failure: true\n  on_success: touch ran\n")
	if _, err := os.Stat(filepath.Join(dir, "ran")); err == nil || res.Status != StepFailed {
		t.Errorf("on_success ran after a failure (status %s)", res.Status)
	}

	res, _, _ = runFirstStep(t, t.Context(), "- shell: 'true'\n  on_success: exit 5\n")
	if !res.Fatal() || !strings.Contains(res.Err.Error(), "on_success handler failed") {
		t.Errorf("a failing on_success handler: fatal %v, err %v", res.Fatal(), res.Err)
	}
}

// on_exit_code runs the handler for the code the command exited with and
// leaves the step's result as it was: a non-zero code still fails it,
// after its handler ran, unless on_failure handles the failure.
func TestOnExitCode(t *testing.T) {
	const handlers = `
  on_exit_code:
    0: echo zero >> codes
    3: echo three >> codes
    4: echo four >> codes
`
	for _, tt := range []struct {
		command, onFailure, codes string
		status                    StepStatus
		fatal                     bool
	}{
		{"exit 0", "", "zero\n", StepSucceeded, false},
		{"exit 3", "", "three\n", StepFailed, true},
		{"exit 3", "  on_failure: true\n", "three\n", StepFailed, false},
		{"exit 7", "", "", StepFailed, true},
		{"test -f fixed || { touch fixed; exit 4; }", "  on_failure: {shell: 'true', max_attempts: 2}\n", "four\nzero\n", StepSucceeded, false},
	} {
		t.Run(tt.command, func(t *testing.T) {
			res, _, dir := runFirstStep(t, t.Context(), "- shell: '"+tt.command+"'\n"+tt.onFailure+handlers)
			if res.Status != tt.status || res.Fatal() != tt.fatal {
				t.Errorf("result %s, fatal %v, want %s, %v", res.Status, res.Fatal(), tt.status, tt.fatal)
			}
			codes, _ := os.ReadFile(filepath.Join(dir, "codes"))
			if string(codes) != tt.codes {
				t.Errorf("handlers ran %q, want %q", codes, tt.codes)
			}
		})
	}
}

// A handler also reads the failed run's streams apart and its exit code,
// under Prodigy's names ${shell.stdout}, ${shell.stderr}, ${shell.exit_code}.
func TestFailureHandlerReadsStreamsApart(t *testing.T) {
	_, _, dir := runFirstStep(t, t.Context(), `
- shell: 'echo out; echo err >&2; exit 4'
  on_failure:
    shell: 'printf "%s|%s|%s\n" "${shell.stdout}" "${shell.stderr}" "${shell.exit_code}" > seen'
`)
	if got := readFile(t, filepath.Join(dir, "seen")); got != "out|err|4\n" {
		t.Errorf("the handler read %q", got)
	}
}

// An on_failure handler reads the failed run's own ${ID.*} (Prodigy's
// "/fix-failing-tests '${test.output}'"), success false.
func TestFailureHandlerReadsItsStep(t *testing.T) {
	_, _, dir := runFirstStep(t, t.Context(), `
- id: test
  shell: 'echo "2 failed"; exit 1'
  on_failure:
    shell: 'echo "${test.output}|${test.success}|${steps.test.exit_code}" > seen'
`)
	if got := readFile(t, filepath.Join(dir, "seen")); got != "2 failed|false|1\n" {
		t.Errorf("the handler read %q", got)
	}
}

// Run.Attempt marks each attempt of the step, not those of its handler's
// steps, whose output goes with the step's attempt: what a step's log
// headers count (issue 40.1).
func TestRunAttemptHookCountsTheStepsAttempts(t *testing.T) {
	wf, err := workflow.Parse("h.yml", []byte(`
- shell: 'echo try; test -f ok || { touch ok; exit 1; }'
  retry_config:
    attempts: 2
    backoff: fixed
    initial_delay: 1ms
  on_success:
    shell: 'echo handler'
`))
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	var seen []int
	x := &Executor{Env: os.Environ(), TmpDir: t.TempDir()}
	r := Run{Scope: NewScope(nil, os.Environ()), Dir: t.TempDir(), Stdout: &out, Attempt: func(n int) {
		seen = append(seen, n)
		out.WriteString("--- " + strconv.Itoa(n) + "\n")
	}}
	x.RunStep(t.Context(), wf.Steps[0], r)
	if want := []int{1, 2}; !slices.Equal(seen, want) {
		t.Errorf("attempts marked %v, want %v", seen, want)
	}
	if want := "--- 1\ntry\n--- 2\ntry\nhandler\n"; out.String() != want {
		t.Errorf("output %q, want %q", out.String(), want)
	}
}
