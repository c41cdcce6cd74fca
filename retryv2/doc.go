// Package retryv2 decides whether and when a failed command runs again:
// backoff arithmetic, jitter, failure matchers, budgets and the retry loop.
//
// A Policy is pure data: how many attempts, a Backoff strategy and its
// delays, jitter, the Matchers of the failures it handles (RetryOn; none:
// every failure), a Budget. Delay(k, rnd) computes the pause after the k-th
// failure, the randomness passed in. Run drives attempts under a Spec's
// policies, first match wins, each policy counting its own failures, and
// returns the last Outcome with nil, an *Error that says why it stopped, or
// the cause of a cancelled ctx:
//
//	p := retryv2.DefaultPolicy()
//	p.Backoff.Strategy = retryv2.Exponential
//	last, err := retryv2.Run(ctx, retryv2.Spec{Policies: []retryv2.Policy{p}},
//		func(ctx context.Context, n int) retryv2.Outcome { return attempt(ctx, n) })
//
// While it waits, Run gives the Spec's Slot back (Pause); a policy with
// RetryAfter waits the delay the command asked for instead, in
// $RUNNER_RETRY_AFTER_FILE or a Retry-After line of its output.
package retryv2
