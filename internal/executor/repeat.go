package executor

import (
	"context"
	"fmt"
	"maps"
	"time"

	"github.com/runnerdev/runner/internal/eventlog"
	"github.com/runnerdev/runner/retryv2"
	"github.com/runnerdev/runner/workflow"
)

// maxPollGap caps a repeat's growing interval unless the interval itself
// is longer.
const maxPollGap = time.Minute

// runRepeated runs the step's attempts once, or, with `repeat`, again and
// again after each success until the condition holds.
func (x *Executor) runRepeated(ctx context.Context, step *workflow.Step, r Run) (commandResult, error) {
	rp := step.Repeat
	if rp == nil {
		return x.attempts(ctx, step, r)
	}
	r.Waiting, r.From = nil, nil // a repeat's runs are not checkpointed: it starts over
	start := time.Now()
	var spent *eventlog.AgentUsage
	gaps := retryv2.Policy{Backoff: rp.Backoff, InitialDelay: rp.Interval, MaxDelay: max(rp.Interval, maxPollGap)}
	for run := 1; ; run++ {
		res, err := x.attempts(ctx, step, r)
		spent = eventlog.AddUsage(spent, res.usage)
		res.usage = spent // the step's spend: all its runs'
		if err != nil {
			return res, err
		}
		vars := maps.Clone(r.Scope.Vars())
		maps.Copy(vars, retryv2.OutcomeVars(res.Outcome))
		done, err := rp.Until.Bool(vars)
		if err != nil {
			return res, fmt.Errorf("repeat until: %w", err)
		}
		if done {
			return res, nil
		}
		if rp.MaxAttempts > 0 && run >= rp.MaxAttempts {
			return res, fmt.Errorf("repeat: condition not met after %d runs (until: %s)", run, rp.Until.Source)
		}
		gap := gaps.Delay(run, nil)
		if rp.Timeout > 0 && time.Since(start)+gap >= rp.Timeout {
			return res, fmt.Errorf("repeat: condition not met within %s (until: %s)", rp.Timeout, rp.Until.Source)
		}
		x.emit(r, eventlog.StepRepeat(r.label(step), run, gap))
		if err := retryv2.Pause(ctx, gap, r.Slot); err != nil {
			return res, err
		}
	}
}
