package executor

import (
	"context"
	"errors"

	"github.com/runnerdev/runner/internal/eventlog"
	"github.com/runnerdev/runner/workflow"
)

// handleFailure applies the step's failure handling to a final failure
// cause; handlers see the cause as ${error.message}.
func (x *Executor) handleFailure(ctx context.Context, step *workflow.Step, r Run, last commandResult, cause error) StepResult {
	key := r.label(step)
	err := stepError(key, cause)
	res := StepResult{Status: StepFailed, Outcome: last.Outcome, Attempts: last.Attempt, Err: err}
	if ctx.Err() != nil {
		x.emit(r, eventlog.StepCommandFailed(key, err.Error(), last.ExitCode, "").WithOutput(last.Stdout, last.Stderr))
		return res // an interrupt is never "handled"
	}
	action := step.OnFailure.Action
	if action == workflow.FailHandler && step.OnFailure.MaxAttempts > 0 {
		return x.fixLoop(ctx, step, r, last, cause)
	}
	x.emit(r, eventlog.StepCommandFailed(key, err.Error(), last.ExitCode, handledName(action)).WithOutput(last.Stdout, last.Stderr))

	res.Handled = action
	switch action {
	case workflow.FailContinue:
		// The step's variables are set as they are, so that the steps that
		// go on can read ${ID.success} or ${NAME.exit_code}; a capture
		// whose output does not convert has no value.
		res.Vars, _ = x.capture(step, last, r.Scope)
		return res
	case workflow.FailFallback:
		hr := r
		hr.Scope = r.Scope.Child()
		hr.Scope.Set("error", errorVars(step, last, cause))
		fb := x.runCommand(ctx, step, step.OnFailure.Commands[0], hr, 1, step.Capture != "")
		if fb.Failed() {
			res.Handled = workflow.FailStop
			res.Err = errors.Join(err, handlerError("fallback", fb))
			x.emit(r, eventlog.FallbackFailed(key, fb.Message()))
			return res
		}
		vars, cerr := x.capture(step, fb, r.Scope)
		if cerr != nil {
			res.Handled = workflow.FailStop
			res.Err = errors.Join(err, cerr)
			return res
		}
		x.emit(r, eventlog.StepCompletedByFallback(key))
		return StepResult{Status: StepSucceeded, Handled: workflow.FailFallback, Outcome: fb.Outcome, Attempts: last.Attempt, Err: err, Vars: vars}
	case workflow.FailHandler:
		if herr := x.runFailureHandler(ctx, step, r, last, cause); herr != nil {
			res.Handled = workflow.FailStop
			res.Err = errors.Join(err, herr)
			return res
		}
		if step.OnFailure.FailWorkflow {
			res.Handled = workflow.FailStop
		}
		return res
	}
	res.Handled = workflow.FailStop
	return res
}

func handlerError(what string, h commandResult) error {
	return &handlerFailure{what: what, message: h.Message()}
}

// errorVars are ${error.*}, which a failure handler reads.
func errorVars(step *workflow.Step, last commandResult, cause error) map[string]any {
	return map[string]any{"message": cause.Error(), "exit_code": last.ExitCode, "step": step.Key()}
}

// handlerFailure is a failed fallback or handler.
type handlerFailure struct {
	what    string
	message string
}

func (e *handlerFailure) Error() string { return e.what + " failed: " + e.message }
