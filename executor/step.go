// Package executor runs one step of a workflow: its condition, its command
// attempts under retry_config and circuit breaker, its capture and its
// failure handling, emitting events as it goes.
package executor

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/runnerdev/runner/eventlog"
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
}

// Fatal reports whether the result stops the workflow (or fails the item).
func (r StepResult) Fatal() bool {
	return r.Status == StepFailed && (r.Handled == "" || r.Handled == workflow.FailStop)
}

// RunStep runs one step in r's scope: its condition, its attempts, its
// capture and its failure handling. Variables it sets land in r.Scope.
func (x *Executor) RunStep(ctx context.Context, step *workflow.Step, r Run) StepResult {
	key := step.Key()
	if step.When != nil {
		ok, err := step.When.Bool(r.Scope.Vars())
		if err != nil {
			err = fmt.Errorf("step %q: when: %w", step.Key(), err)
			x.emit(r, eventlog.StepFailed(key, err.Error()))
			return StepResult{Status: StepFailed, Err: err}
		}
		if !ok {
			x.emit(r, eventlog.StepSkipped(key, "when: "+step.When.Source))
			return StepResult{Status: StepSkipped, Vars: skippedVars(step, r.Scope)}
		}
	}
	x.emit(r, eventlog.StepStarted(key, step.Index+1, step.Command.Text.String()))
	start := time.Now()
	if step.TracksCommits() {
		t, err := x.trackCommits(ctx, step, r)
		if err != nil {
			return x.handleFailure(ctx, step, r, commandResult{Outcome: retryv2.Outcome{Kind: retryv2.KindSpawn, ExitCode: -1, Err: err}}, err)
		}
		r.commits = t
	}
	res, err := x.runRepeated(ctx, step, r)
	setOutput(step, res, r.Scope)
	if err == nil && len(step.Outputs) > 0 {
		res.outputs, err = r.commits.stepOutputs(ctx)
	}
	if err == nil {
		vars, cerr := x.capture(step, res, r.Scope)
		if cerr == nil {
			x.emit(r, eventlog.StepCompleted(key, res.ExitCode, time.Since(start)))
			return StepResult{Status: StepSucceeded, Outcome: res.Outcome, Attempts: res.Attempt, Vars: vars}
		}
		err = cerr
	}
	return x.handleFailure(ctx, step, r, res, err)
}

// stepError names the step in its final error: "step "x" failed after 3
// attempts (attempts exhausted): ..." or "step "x" failed: ...".
func stepError(step *workflow.Step, err error) error {
	var final *retryv2.Error
	if errors.As(err, &final) {
		return fmt.Errorf("step %q %w", step.Key(), err)
	}
	return fmt.Errorf("step %q failed: %w", step.Key(), err)
}

// attempts runs the command under the step's retry policies and returns
// the last attempt with the final error.
func (x *Executor) attempts(ctx context.Context, step *workflow.Step, r Run) (commandResult, error) {
	capture := step.Capture != ""
	key := step.Key()
	var ran commandResult // the last attempt that really ran
	spec := retryv2.Spec{
		Policies: step.Retry,
		Disabled: !step.Retryable,
		Rand:     x.jitterSource(step, r),
		Breaker:  x.breaker(step),
		Slot:     r.Slot,
		Started: func(n int) {
			x.emit(r, eventlog.AttemptStarted(key, n))
		},
		Finished: func(o retryv2.Outcome) {
			if o.Failed() {
				x.emit(r, eventlog.AttemptFailed(eventlog.Failure{Step: key, Attempt: o.Attempt, Kind: o.Kind, ExitCode: o.ExitCode, Message: o.Message(), Duration: o.Duration}))
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
		ran = x.runCommand(ctx, step, step.Command, r, n, capture)
		if r.commits != nil && !ran.Failed() {
			ran = r.commits.check(ctx, ran)
		}
		return ran.Outcome
	})
	ran.Outcome = last
	var final *retryv2.Error
	if len(step.Retry) == 0 && errors.As(err, &final) {
		err = errors.New(last.Message()) // no policy: no retry vocabulary in the message
	}
	return ran, err
}
