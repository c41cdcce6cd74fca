package errorpolicy

import "fmt"

// Tracker counts finished items and says when the policy stops the job.
// It is not safe for concurrent use.
type Tracker struct {
	p                 Policy
	processed, failed int
}

// NewTracker starts counting for p.
func NewTracker(p Policy) *Tracker { return &Tracker{p: p} }

// Verdict says which rule stops a job, and why in words.
type Verdict struct {
	Rule   string // on_item_failure, continue_on_failure, max_failures or failure_threshold
	Reason string
}

// Record counts one finished item and returns the rule that stops the job
// now, or nil to go on. A failed item is one that finally failed, whatever
// the policy then did with it (DLQ, skip).
func (t *Tracker) Record(failed bool) *Verdict {
	t.processed++
	if failed {
		t.failed++
	}
	switch p := t.p; {
	case failed && p.OnItemFailure == Stop:
		return &Verdict{"on_item_failure", "an item failed and on_item_failure is stop"}
	case failed && !p.ContinueOnFailure:
		return &Verdict{"continue_on_failure", "an item failed and continue_on_failure is false"}
	case failed && p.MaxFailures > 0 && t.failed >= p.MaxFailures:
		return &Verdict{"max_failures", fmt.Sprintf("max_failures reached: %d items failed", t.failed)}
	case p.FailureThreshold > 0 && t.processed >= p.MinItems && float64(t.failed)/float64(t.processed) > p.FailureThreshold:
		return &Verdict{"failure_threshold", fmt.Sprintf("failure rate %.1f%% (%d of %d items) is over failure_threshold %g%%",
			100*float64(t.failed)/float64(t.processed), t.failed, t.processed, 100*p.FailureThreshold)}
	}
	return nil
}

// Due reports whether, with n failures so far, the failures should be shown
// now: every one for immediate, every BatchSize for batched, never (only
// at the end) for aggregate.
func (c Collection) Due(n int) bool {
	switch c.Mode {
	case "immediate":
		return true
	case "batched":
		return c.BatchSize > 0 && n%c.BatchSize == 0
	}
	return false
}
