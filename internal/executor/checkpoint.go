package executor

import (
	"fmt"
	"maps"
	"time"

	"github.com/runnerdev/runner/internal/jsonvalue"
	"github.com/runnerdev/runner/internal/state"
	"github.com/runnerdev/runner/retryv2"
	"github.com/runnerdev/runner/workflow"
	"github.com/runnerdev/runner/workflow/interp"
)

// StepRetrying is the status of a checkpoint of a step that waits to run
// its next attempt.
const StepRetrying StepStatus = "retrying"

// Record is the checkpoint of a step that finished with r: resume skips
// the step and restores its variables (RecordedVars).
func (r StepResult) Record(step *workflow.Step) state.StepRecord {
	return state.StepRecord{
		Index: step.Index, Key: step.Key(), Status: string(r.Status),
		ExitCode: r.Outcome.ExitCode, Vars: journalVars(r.Vars),
	}
}

// RecordedVars returns the variables a checkpointed step set, with their
// numbers as they were, in maps of their own: the record, which others
// may hold (the item-state index, a task's checkpoints), is not changed.
func RecordedVars(rec state.StepRecord) map[string]any {
	return normalizeVars(jsonvalue.Copy(rec.Vars).(map[string]any))
}

// unavailableKey marks, in the journal, a field whose value runner did not
// keep (an output over outputLimit): {"runner_unavailable": REASON}.
const unavailableKey = "runner_unavailable"

// journalVars is vars as the journal stores them: the Unavailable fields
// of ${steps.ID.*} and a capture's metadata as marks, copied so that the
// scope keeps its values.
func journalVars(vars map[string]any) map[string]any {
	out := maps.Clone(vars)
	for k, v := range out {
		if m, ok := v.(map[string]any); ok {
			for f, fv := range m {
				if u, ok := fv.(interp.Unavailable); ok {
					m = maps.Clone(m)
					m[f] = map[string]any{unavailableKey: u.Reason}
					out[k] = m
				}
			}
		}
	}
	return out
}

// retryingRecord is the checkpoint of a step whose retry loop waits.
func retryingRecord(step *workflow.Step, p retryv2.Progress) state.StepRecord {
	return state.StepRecord{
		Index: step.Index, Key: step.Key(), Status: string(StepRetrying),
		Attempts: p.Attempts, Failures: p.Failures, ElapsedMS: p.Elapsed.Milliseconds(),
		Due: time.Now().Add(p.Delay),
	}
}

// retryProgress continues the retry loop a retrying checkpoint saved.
func retryProgress(rec *state.StepRecord) *retryv2.Progress {
	if rec == nil {
		return nil
	}
	return &retryv2.Progress{
		Attempts: rec.Attempts, Failures: rec.Failures,
		Elapsed: time.Duration(rec.ElapsedMS) * time.Millisecond, Delay: time.Until(rec.Due),
	}
}

func normalizeVars(vars map[string]any) map[string]any {
	for k, v := range vars {
		v = jsonvalue.NormalizeNumbers(v)
		if m, ok := v.(map[string]any); ok {
			for f, fv := range m {
				if mark, ok := fv.(map[string]any); ok && len(mark) == 1 && mark[unavailableKey] != nil {
					m[f] = interp.Unavailable{Reason: fmt.Sprint(mark[unavailableKey])}
				}
				if list, ok := fv.([]any); ok && f == "commits" {
					m[f] = interp.JSONList(list) // a step's commits stay a JSON array
				}
			}
		}
		vars[k] = v
	}
	return vars
}
