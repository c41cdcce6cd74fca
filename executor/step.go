// Package executor runs one step of a workflow: its condition, its command
// attempts under retry_config and circuit breaker, its capture and its
// failure handling, emitting events as it goes.
package executor

import (
	"context"
	"errors"
	"fmt"
	"time"

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
			x.emit(r, "step_failed", map[string]any{"step": key, "error": err.Error()})
			return StepResult{Status: StepFailed, Err: err}
		}
		if !ok {
			x.emit(r, "step_skipped", map[string]any{"step": key, "reason": "when: " + step.When.Source})
			return StepResult{Status: StepSkipped}
		}
	}
	x.emit(r, "step_started", map[string]any{"step": key, "index": step.Index + 1, "command": step.Shell.String()})
	start := time.Now()
	res, err := x.runRepeated(ctx, step, r)
	if err == nil {
		vars, cerr := x.capture(step, res, r.Scope)
		if cerr == nil {
			x.emit(r, "step_completed", map[string]any{"step": key, "exit_code": res.ExitCode, "duration_ms": ms(time.Since(start))})
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
	capture := step.Capture != "" || step.ID != ""
	key := step.Key()
	var ran commandResult // the last attempt that really ran
	spec := retryv2.Spec{
		Policies: step.Retry,
		Disabled: !step.Retryable,
		Rand:     x.jitterSource(step, r),
		Breaker:  x.breaker(step),
		Slot:     r.Slot,
		Started: func(n int) {
			x.emit(r, "attempt_started", map[string]any{"step": key, "attempt": n})
		},
		Finished: func(o retryv2.Outcome) {
			if o.Failed() {
				x.emit(r, "attempt_failed", attemptFailedFields(key, o))
			} else {
				x.emit(r, "attempt_succeeded", map[string]any{"step": key, "attempt": o.Attempt, "duration_ms": ms(o.Duration)})
			}
		},
		Decided: func(d retryv2.Decision) { x.emit(r, "retry_decision", decisionFields(key, d)) },
		From:    retryProgress(r.From),
	}
	if r.Waiting != nil {
		spec.Waiting = func(p retryv2.Progress) error { return r.Waiting(retryingRecord(step, p)) }
	}
	last, err := retryv2.Run(ctx, spec, func(ctx context.Context, n int) retryv2.Outcome {
		ran = x.runCommand(ctx, step, step.Shell, r, n, capture)
		return ran.Outcome
	})
	ran.Outcome = last
	var final *retryv2.Error
	if len(step.Retry) == 0 && errors.As(err, &final) {
		err = errors.New(last.Message()) // no policy: no retry vocabulary in the message
	}
	return ran, err
}

func decisionFields(key string, d retryv2.Decision) map[string]any {
	return map[string]any{
		"step":      key,
		"attempt":   d.Attempt,
		"policy":    d.Policy,
		"matcher":   d.Matcher,
		"action":    d.Action,
		"delay_ms":  ms(d.Delay),
		"reason":    d.Reason,
		"limit":     d.Limit,
		"count":     d.Count,
		"kind":      d.Failure.Kind,
		"exit_code": d.Failure.ExitCode,
	}
}

func attemptFailedFields(key string, o retryv2.Outcome) map[string]any {
	return map[string]any{
		"step":        key,
		"attempt":     o.Attempt,
		"kind":        o.Kind,
		"exit_code":   o.ExitCode,
		"duration_ms": ms(o.Duration),
		"message":     o.Message(),
	}
}

func ms(d time.Duration) int64 { return d.Milliseconds() }
