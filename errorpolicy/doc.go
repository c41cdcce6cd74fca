// Package errorpolicy decides what a MapReduce job does after an item
// fails: send it to the DLQ, retry, skip or stop; failure thresholds; and the
// workflow circuit breaker that pauses dispatch.
//
// A Policy is a workflow's error_policy (Default when it sets none): the
// Action for an item that finally failed, the rules that stop the job
// (continue_on_failure, max_failures, failure_threshold over MinItems), when
// failures are shown (Collection) and the workflow breaker. A Tracker counts
// finished items and returns the Verdict that stops the job; a Gate, the
// breaker in front of dispatch, holds items back while it is open:
//
//	t, g := errorpolicy.NewTracker(p), errorpolicy.NewGate(*p.Breaker, nil)
//	pass, err := g.Admit(ctx) // waits while the breaker is open
//	failed := run(ctx, item) != nil
//	pass.Done(failed)
//	if v := t.Record(failed); v != nil {
//		return fmt.Errorf("%s: %s", v.Rule, v.Reason)
//	}
package errorpolicy
