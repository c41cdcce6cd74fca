package executor

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/runnerdev/runner/internal/eventlog"
	"github.com/runnerdev/runner/retryv2"
	"github.com/runnerdev/runner/workflow"
)

// failedOutputInline is the longest failed output a handler reads in
// ${shell.output} itself; a longer one is written to a file, and
// ${shell.output} is that file's path (as Prodigy does).
const failedOutputInline = 10_000

// fixLoop is on_failure with max_attempts: the step runs at most
// max_attempts times in all, its first run (last, which failed with
// cause) included, and the handler runs after each failed run but the
// last. A handler that fails does not end the loop (Prodigy's "continuing
// with retry"). The step fails when its last run fails; that stops the
// workflow only with fail_workflow: true.
func (x *Executor) fixLoop(ctx context.Context, step *workflow.Step, r Run, last commandResult, cause error) StepResult {
	key, fl := r.label(step), step.OnFailure
	// The loop is not checkpointed: an interrupted one starts again from
	// the step's first run.
	r.Waiting, r.From = nil, nil
	handlerFailures := 0
	for runs := 1; ; runs++ {
		err := stepError(key, cause)
		res := StepResult{Status: StepFailed, Outcome: last.Outcome, Attempts: last.Attempt, Err: err}
		if ctx.Err() != nil {
			x.emit(r, eventlog.StepCommandFailed(key, err.Error(), last.ExitCode, "").WithOutput(last.Stdout, last.Stderr))
			return res // an interrupt is never "handled"
		}
		if runs >= fl.MaxAttempts {
			res.Err = fmt.Errorf("%w (%s)", err, loopSummary(runs, handlerFailures))
			res.Handled = workflow.FailHandler
			if fl.FailWorkflow {
				res.Handled = workflow.FailStop
			}
			x.emit(r, eventlog.StepCommandFailed(key, res.Err.Error(), last.ExitCode, handledName(res.Handled)).WithOutput(last.Stdout, last.Stderr))
			return res
		}
		x.emit(r, eventlog.StepCommandFailed(key, err.Error(), last.ExitCode, string(workflow.FailHandler)).WithOutput(last.Stdout, last.Stderr))
		if herr := x.runFailureHandler(ctx, step, r, last, cause); herr != nil {
			if ctx.Err() != nil {
				res.Err = errors.Join(err, herr)
				return res // interrupted in the handler: not handled either
			}
			handlerFailures++
		}
		run := x.run(ctx, step, r)
		if res, final := x.settle(ctx, step, r, &run); final {
			return res
		}
		last, cause = run.res, run.err
	}
}

// loopSummary says how a fix loop that never passed went: its runs and
// its handler's.
func loopSummary(runs, handlerFailures int) string {
	if runs == 1 {
		return "on_failure max_attempts is 1: no run of its handler, no re-run"
	}
	s := fmt.Sprintf("still failing after %d runs; its on_failure handler ran %s", runs, times(runs-1))
	switch {
	case handlerFailures == runs-1:
		s += " and failed each time"
	case handlerFailures > 0:
		s += fmt.Sprintf(" and failed %s", times(handlerFailures))
	}
	return s
}

// times is "once", "2 times"...
func times(n int) string {
	if n == 1 {
		return "once"
	}
	return fmt.Sprintf("%d times", n)
}

// handledName is an action as step_failed events name it: "" when the
// failure stops the workflow.
func handledName(a workflow.FailureAction) string {
	if a == workflow.FailStop {
		return ""
	}
	return string(a)
}

// runFailureHandler runs the on_failure handler's commands once after a
// run of the step failed with last: they read ${error.*} and, in
// ${shell.output}, the failed run's output. With commit_required they must
// make a git commit; then the handler's on_success steps run.
func (x *Executor) runFailureHandler(ctx context.Context, step *workflow.Step, r Run, last commandResult, cause error) error {
	hr := r
	hr.Scope = r.Scope.Child()
	hr.Scope.Set("error", errorVars(step, last, cause))
	// The failed run's own variables (${ID.output}, ${ID.success} false,
	// a capture), as the handler reads them; a capture whose output does
	// not convert has no value.
	_, _ = x.capture(step, last, hr.Scope)
	output, cleanup, err := x.failedOutput(last.Outcome)
	if err != nil {
		return &handlerFailure{what: "on_failure handler", message: err.Error()}
	}
	defer cleanup()
	hr.Scope.SetIn("shell", "output", output)
	// Prodigy's other names for the failed run: its streams apart (the
	// same 64 KiB tails, trailing newlines trimmed) and its exit code.
	hr.Scope.SetIn("shell", "stdout", strings.TrimRight(last.Stdout, "\r\n"))
	hr.Scope.SetIn("shell", "stderr", strings.TrimRight(last.Stderr, "\r\n"))
	hr.Scope.SetIn("shell", "exit_code", last.ExitCode)
	var commits *commitTracker
	if step.OnFailure.CommitRequired {
		watched := *step
		watched.CommitRequired, watched.AutoCommit = true, false
		if commits, err = x.trackCommits(ctx, &watched, hr); err != nil {
			return &handlerFailure{what: "on_failure handler", message: err.Error()}
		}
	}
	cmds := step.OnFailure.Commands
	for i, cmd := range cmds {
		h := x.runCommand(ctx, step, cmd, hr, 1, false)
		if commits != nil && i == len(cmds)-1 && !h.Failed() {
			h = commits.check(ctx, h)
		}
		if h.Failed() {
			x.emit(r, eventlog.HandlerFailed(r.label(step), i+1, h.ExitCode, h.Message()))
			return handlerError("on_failure handler", h)
		}
		x.emit(r, eventlog.HandlerCompleted(r.label(step), i+1, h.ExitCode))
	}
	if len(step.OnFailure.OnSuccess) > 0 {
		_, err := x.runHandler(ctx, "on_failure's on_success", step.OnFailure.OnSuccess, hr)
		return err
	}
	return nil
}

// failedOutput is a failed run's output as a handler reads it in
// ${shell.output}: "STDOUT:\n...\n\nSTDERR:\n..." (the last 64 KiB of each
// stream, secrets masked), or, when that is longer than
// failedOutputInline, the path of a file holding it, which cleanup
// removes once the handler ran.
func (x *Executor) failedOutput(o retryv2.Outcome) (output string, cleanup func(), err error) {
	text := "STDOUT:\n" + strings.TrimRight(o.Stdout, "\n") + "\n\nSTDERR:\n" + strings.TrimRight(o.Stderr, "\n")
	if len(text) <= failedOutputInline {
		return text, func() {}, nil
	}
	f, err := os.CreateTemp(x.TmpDir, "failed-output-*.txt")
	if err != nil {
		return "", nil, fmt.Errorf("writing the failed output: %w", err)
	}
	_, err = f.WriteString(text)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	path, _ := filepath.Abs(f.Name())
	if err != nil {
		os.Remove(path)
		return "", nil, fmt.Errorf("writing the failed output: %w", err)
	}
	return path, func() { os.Remove(path) }, nil
}
