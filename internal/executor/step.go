package executor

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"time"

	"github.com/runnerdev/runner/internal/eventlog"
	"github.com/runnerdev/runner/retryv2"
	"github.com/runnerdev/runner/workflow"
)

// StepStatus is how a step ended.
type StepStatus string

// workflow.Step statuses.
const (
	StepSucceeded StepStatus = "succeeded"
	StepFailed    StepStatus = "failed"
	StepSkipped   StepStatus = "skipped"
)

// StepResult is the end of one step execution.
type StepResult struct {
	Status   StepStatus
	Handled  workflow.FailureAction // how a failure was handled; "" for none
	Outcome  retryv2.Outcome
	Attempts int
	Err      error          // the failure, also when handled
	Vars     map[string]any // variables the step set, for resume
	// Usage is what the agents of its attempts spent (a claude: step
	// whose agent reported it); nil otherwise.
	Usage *eventlog.AgentUsage
}

// Fatal reports whether the result stops the workflow (or fails the item).
func (r StepResult) Fatal() bool {
	return r.Status == StepFailed && (r.Handled == "" || r.Handled == workflow.FailStop)
}

// RunStep runs one step in r's scope: its condition, its attempts, its
// capture and its failure handling. Variables it sets land in r.Scope; the
// commands of the computed variables it reads (${cmd:COMMAND}) run under
// ctx.
func (x *Executor) RunStep(ctx context.Context, step *workflow.Step, r Run) StepResult {
	r.Scope = r.Scope.Under(ctx)
	key := r.label(step)
	r.Scope.SetIn("step", "name", step.Key())
	r.Scope.SetIn("step", "index", step.Index)
	if step.When != nil {
		ok, err := step.When.Bool(r.Scope.Vars())
		if err != nil {
			err = fmt.Errorf("step %q: when: %w", key, err)
			x.emit(r, eventlog.StepFailed(key, err.Error()))
			return StepResult{Status: StepFailed, Err: err}
		}
		if !ok {
			x.emit(r, eventlog.StepSkipped(key, "when: "+step.When.Source))
			return StepResult{Status: StepSkipped, Vars: skippedVars(step, r.Scope)}
		}
	}
	git := x.trackGit(ctx, r)
	defer git.set(context.WithoutCancel(ctx), r.Scope)
	return x.conclude(ctx, step, r, x.run(ctx, step, r))
}

// stepRun is one run of a step: its last attempt, the error that failed
// it, and what its on_exit_code handler did.
type stepRun struct {
	res        commandResult
	err        error
	start      time.Time
	handler    handlerRun // what the on_exit_code handler's steps did
	handlerErr error      // the on_exit_code handler failed
}

// run runs the step once: its attempts (and repeats), then the
// on_exit_code handler for the exit code of its last attempt.
func (x *Executor) run(ctx context.Context, step *workflow.Step, r Run) stepRun {
	x.emit(r, eventlog.StepStarted(r.label(step), step.Index+1, step.CommandText()))
	sr := stepRun{start: time.Now()}
	if step.TracksCommits() {
		t, err := x.trackCommits(ctx, step, r)
		if err != nil {
			sr.res, sr.err = commandResult{Outcome: retryv2.Outcome{Kind: retryv2.KindSpawn, ExitCode: -1, Err: err}}, err
			return sr
		}
		r.commits = t
	}
	sr.res, sr.err = x.runRepeated(ctx, step, r)
	setOutput(step, sr.res, r.Scope)
	if sr.err == nil && len(step.Outputs) > 0 {
		sr.res.outputs, sr.err = r.commits.stepOutputs(ctx)
	}
	if handler := step.OnExitCode[sr.res.ExitCode]; handler != nil && exited(sr.res.Outcome) && ctx.Err() == nil {
		sr.handler, sr.handlerErr = x.runHandler(ctx, "on_exit_code", handler, r)
	}
	return sr
}

// conclude turns a run into the step's result: its capture and on_success
// handler when it succeeded, its failure handling otherwise.
func (x *Executor) conclude(ctx context.Context, step *workflow.Step, r Run, run stepRun) StepResult {
	res, final := x.settle(ctx, step, r, &run)
	if !final {
		res = x.handleFailure(ctx, step, r, run.res, run.err)
	}
	res.Usage = run.res.usage
	return res
}

// settle gives a run's result when nothing is left to handle: its
// on_exit_code handler failed, or it succeeded (captured, validated, its
// on_success run). Otherwise run.err is the failure to handle, which a
// capture that failed becomes.
func (x *Executor) settle(ctx context.Context, step *workflow.Step, r Run, run *stepRun) (StepResult, bool) {
	if run.handlerErr != nil {
		return x.handlerFailed(step, r, run.res, run.err, run.handlerErr), true
	}
	if run.err == nil {
		res, err := x.succeed(ctx, step, r, *run)
		if err == nil {
			return res, true
		}
		run.err = err
	}
	return StepResult{}, false
}

// succeed checks the step's declared output file, captures a successful
// run's output and runs the on_success handler; the error is a missing
// output or a capture that failed, which fails the run.
func (x *Executor) succeed(ctx context.Context, step *workflow.Step, r Run, run stepRun) (StepResult, error) {
	if err := x.checkOutput(step, r); err != nil {
		return StepResult{}, err
	}
	vars, err := x.capture(step, run.res, r.Scope)
	if err != nil {
		return StepResult{}, err
	}
	vars, handled := mergeVars(vars, run.handler.vars), run.handler.handled
	if step.Validate != nil {
		done := StepResult{Status: StepSucceeded, Outcome: run.res.Outcome, Attempts: run.res.Attempt, Err: handled, Vars: vars}
		if v := x.validated(ctx, step, r, done); v.Status != StepSucceeded {
			return v, nil
		}
	}
	if len(step.OnSuccess) > 0 {
		h, herr := x.runHandler(ctx, "on_success", step.OnSuccess, r)
		if herr != nil {
			return x.handlerFailed(step, r, run.res, nil, herr), nil
		}
		vars, handled = mergeVars(vars, h.vars), errors.Join(handled, h.handled)
	}
	x.emit(r, eventlog.StepCompleted(r.label(step), run.res.ExitCode, time.Since(run.start)).WithOutput(run.res.Stdout, run.res.Stderr))
	// The handlers' handled failures are the step's, for the summary.
	return StepResult{Status: StepSucceeded, Outcome: run.res.Outcome, Attempts: run.res.Attempt, Err: handled, Vars: vars}, nil
}

// checkOutput fails a step whose command succeeded without writing the
// file its output: key declares, so that the steps that read the file do
// not fail later with a message that does not name the step at fault.
func (x *Executor) checkOutput(step *workflow.Step, r Run) error {
	if step.Output == nil {
		return nil
	}
	name, path, err := x.stepPath(step, r, step.Output, "output")
	if err != nil {
		return err
	}
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("output: the step did not write %s", name)
	} else if err != nil {
		return fmt.Errorf("output: %w", err)
	}
	return nil
}

// stepError names the step in its final error: "step "x" failed after 3
// attempts (attempts exhausted): ..." or "step "x" failed: ...".
func stepError(label string, err error) error {
	var final *retryv2.Error
	if errors.As(err, &final) {
		return fmt.Errorf("step %q %w", label, err)
	}
	return fmt.Errorf("step %q failed: %w", label, err)
}

// attempts runs the command under the step's retry policies and returns
// the last attempt with the final error.
func (x *Executor) attempts(ctx context.Context, step *workflow.Step, r Run) (commandResult, error) {
	capture := step.Capture != ""
	key := r.label(step)
	var ran commandResult          // the last attempt that really ran
	var spent *eventlog.AgentUsage // what the attempts' agents spent
	spec := retryv2.Spec{
		Policies: step.Retry,
		Disabled: !step.Retryable,
		Rand:     x.jitterSource(step, r),
		Breaker:  x.breaker(step, r),
		Slot:     r.Slot,
		Started: func(n int) {
			if r.Attempt != nil {
				r.Attempt(n)
			}
			x.emit(r, eventlog.AttemptStarted(key, n))
		},
		Finished: func(o retryv2.Outcome) {
			if o.Failed() {
				x.emit(r, eventlog.AttemptFailed(eventlog.Failure{Step: key, Attempt: o.Attempt, Kind: o.Kind, ExitCode: o.ExitCode, Message: o.Message(), Duration: o.Duration, Stdout: o.Stdout, Stderr: o.Stderr}))
			} else {
				x.emit(r, eventlog.AttemptSucceeded(key, o.Attempt, o.Duration))
			}
		},
		Decided: func(d retryv2.Decision) {
			x.emit(r, eventlog.RetryDecision(key, eventlog.Decision{
				Attempt: d.Attempt, Policy: d.Policy, Matcher: d.Matcher, Action: d.Action, Delay: d.Delay,
				Reason: d.Reason, Limit: d.Limit, Count: d.Count, Kind: d.Failure.Kind, ExitCode: d.Failure.ExitCode,
			}))
		},
		From: retryProgress(r.From),
	}
	if r.Waiting != nil {
		spec.Waiting = func(p retryv2.Progress) error { return r.Waiting(retryingRecord(step, p)) }
	}
	last, err := retryv2.Run(ctx, spec, func(ctx context.Context, n int) retryv2.Outcome {
		ran = x.runCommandTo(ctx, step, r, n, capture)
		spent = eventlog.AddUsage(spent, ran.usage)
		if r.commits != nil && !ran.Failed() {
			ran = r.commits.check(ctx, ran)
		}
		return ran.Outcome
	})
	ran.Outcome, ran.usage = last, spent
	var final *retryv2.Error
	if len(step.Retry) == 0 && errors.As(err, &final) {
		err = errors.New(last.Message()) // no policy: no retry vocabulary in the message
	}
	return ran, err
}
