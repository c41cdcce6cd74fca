package executor

import (
	"context"
	"errors"
	"fmt"
	"maps"

	"github.com/runnerdev/runner/internal/eventlog"
	"github.com/runnerdev/runner/retryv2"
	"github.com/runnerdev/runner/workflow"
)

// handlerRun is what a handler's steps did.
type handlerRun struct {
	vars    map[string]any // the variables they set
	handled error          // their failures that their own failure handling took over
}

// runHandler runs the steps of an on_success or on_exit_code handler in
// order, in the step's scope. A step that fails for good (its own
// on_failure did not handle it) fails the handler, and the rest do not run.
func (x *Executor) runHandler(ctx context.Context, what string, steps []*workflow.Step, r Run) (handlerRun, error) {
	// A handler's steps are not checkpointed: an interrupted one runs again
	// with its step.
	r.Waiting, r.From, r.commits, r.Attempt = nil, nil, nil, nil
	var hr handlerRun
	for _, s := range steps {
		res := x.RunStep(ctx, s, r)
		if res.Fatal() {
			return hr, &handlerFailure{what: what + " handler", message: res.Err.Error()}
		}
		hr.vars = mergeVars(hr.vars, res.Vars)
		hr.handled = errors.Join(hr.handled, res.Err)
	}
	return hr, nil
}

// handlerFailed is the result of a step whose on_success or on_exit_code
// handler failed: the step fails and stops the workflow, whatever its
// command did (cause, nil after a success) and its on_failure says.
func (x *Executor) handlerFailed(step *workflow.Step, r Run, last commandResult, cause, herr error) StepResult {
	err := fmt.Errorf("step %q: %w", r.label(step), herr)
	if cause != nil {
		err = errors.Join(stepError(r.label(step), cause), herr)
	}
	x.emit(r, eventlog.StepCommandFailed(r.label(step), err.Error(), last.ExitCode, "").WithOutput(last.Stdout, last.Stderr))
	return StepResult{Status: StepFailed, Outcome: last.Outcome, Attempts: last.Attempt, Err: err}
}

// exited reports whether the command ran and exited with a code of its
// own (not killed, timed out, or never started).
func exited(o retryv2.Outcome) bool {
	return o.Kind == "" || o.Kind == retryv2.KindExit || o.Kind == retryv2.KindNoCommit
}

// mergeVars adds more to vars, either of which may be nil.
func mergeVars(vars, more map[string]any) map[string]any {
	if len(more) == 0 {
		return vars
	}
	if vars == nil {
		vars = map[string]any{}
	}
	maps.Copy(vars, more)
	return vars
}
