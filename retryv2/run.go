package retryv2

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	retry "github.com/sethvargo/go-retry"

	"github.com/runnerdev/runner/internal/breaker"
)

// Why retrying stopped.
const (
	ReasonExhausted    = "attempts exhausted"
	ReasonBudget       = "budget exhausted"
	ReasonNotRetryable = "not retryable"
	ReasonDisabled     = "retries disabled"
	ReasonCircuitOpen  = "circuit open"
	ReasonCanceled     = "canceled"
)

// ErrBudgetExhausted is the cause given to an attempt killed because the
// retry budget ended.
var ErrBudgetExhausted = errors.New("retry budget exhausted")

// AttemptFunc runs the command once; n is the 1-based attempt number. Its
// ctx ends when the retry budget does.
type AttemptFunc func(ctx context.Context, n int) Outcome

// Decision is what the loop decided after a failed attempt.
type Decision struct {
	Attempt int           // the attempt that failed
	Policy  int           // index of the policy that handled it; -1 for none
	Matcher string        // the matcher that accepted it ("" = no retry_on)
	Action  string        // "retry" or "stop"
	Delay   time.Duration // before the next attempt
	Reason  string        // why: a Reason* constant, or "matched X", "retry-after"
	Limit   int           // the handling policy's attempts (for "attempt 2/5")
	Count   int           // failures the handling policy has seen, this one included
	Failure Outcome       // the failed attempt
}

// Spec is one execution's retry setup.
type Spec struct {
	Policies []Policy         // empty: one attempt
	Disabled bool             // retryable: false
	Rand     func() float64   // jitter source; nil = no jitter randomness (0.5)
	Breaker  *breaker.Breaker // nil: none
	Started  func(n int)      // before each attempt that runs
	Finished func(Outcome)    // after each attempt, also one the breaker refused
	Decided  func(Decision)   // after each failed attempt, when there are policies
	Slot     Slot             // nil: none; else given back during delays
	// Waiting, when set, is told where the loop stands before it waits
	// out a delay; an error stops the loop with that error.
	Waiting func(Progress) error
	// From continues a loop that was waiting when its process ended: the
	// next attempt runs after From.Delay and is numbered after From.Attempts.
	From *Progress
}

// Progress is where a retry loop stands while it waits for its next
// attempt: enough to continue it in another process.
type Progress struct {
	Attempts int           // attempts run
	Failures []int         // failures each policy has handled
	Elapsed  time.Duration // of the retry budget when the next attempt starts
	Delay    time.Duration // before the next attempt
}

// Slot is a place to run attempts in, such as one of a MapReduce job's
// max_parallel agent slots. The caller holds it when Run starts; Run gives
// it back while it waits out a delay and takes it again before the next
// attempt, so a waiting command does not keep others from running. Acquire
// on a held slot and Release on a free one do nothing.
type Slot interface {
	Acquire(ctx context.Context) error
	Release()
}

// Error is a final failure: why retrying stopped and the last failure.
type Error struct {
	Reason   string
	Attempts int
	Last     Outcome
}

func (e *Error) Error() string {
	plural := "s"
	if e.Attempts == 1 {
		plural = ""
	}
	return fmt.Sprintf("failed after %d attempt%s (%s): %s", e.Attempts, plural, e.Reason, e.Last.Message())
}

// Run drives attempts until one succeeds or the policies stop it. It
// returns the last outcome and nil, an *Error, or the context's cause when
// ctx ended; a policy that Validate refuses is an error before any attempt.
func Run(ctx context.Context, spec Spec, attempt AttemptFunc) (Outcome, error) {
	for i, p := range spec.Policies {
		if err := p.Validate(); err != nil {
			return Outcome{}, fmt.Errorf("retry policy %d: %w", i+1, err)
		}
	}
	start := time.Now()
	failures := make([]int, len(spec.Policies))
	var (
		last     Outcome
		final    error
		next     time.Duration
		n        int
		released bool // the slot was given back for a delay
	)
	if p := spec.From; p != nil {
		n, next = p.Attempts, max(p.Delay, 0)
		copy(failures, p.Failures)
		start = start.Add(next - p.Elapsed)
	}
	budget := spec.budget()
	actx, cancel := ctx, context.CancelFunc(func() {})
	if budget > 0 {
		actx, cancel = context.WithDeadlineCause(ctx, start.Add(budget), ErrBudgetExhausted)
	}
	defer cancel()

	backoff := retry.BackoffFunc(func() (time.Duration, bool) { return next, false })
	// giveSlotBack frees the slot for the delay before the next attempt; it
	// is taken again before that attempt, or at the end if ctx ends.
	giveSlotBack := func() {
		if spec.Slot != nil && next > 0 {
			spec.Slot.Release()
			released = true
		}
	}
	resumed := spec.From != nil
	err := retry.Do(actx, backoff, func(ctx context.Context) error {
		if resumed { // the delay the ended process was waiting out
			resumed = false
			giveSlotBack()
			if err := Pause(ctx, next, nil); err != nil {
				return err
			}
		}
		if released {
			if err := spec.Slot.Acquire(ctx); err != nil {
				return err // ctx ended while waiting for a slot: reported below
			}
			released = false
		}
		n++
		last = spec.runOnce(ctx, n, attempt)
		if spec.Finished != nil {
			spec.Finished(last)
		}
		if !last.Failed() {
			return nil
		}
		d := spec.decide(ctx, last, failures, time.Since(start), budget)
		if spec.Decided != nil && len(spec.Policies) > 0 {
			spec.Decided(d) // a step without a policy makes no retry decision
		}
		if d.Action == "stop" {
			final = &Error{Reason: d.Reason, Attempts: n, Last: last}
			if d.Reason == ReasonCanceled {
				final = context.Cause(ctx)
			}
			return final
		}
		next = d.Delay
		if spec.Waiting != nil {
			p := Progress{Attempts: n, Failures: slices.Clone(failures), Elapsed: time.Since(start) + next, Delay: next}
			if err := spec.Waiting(p); err != nil {
				final = err
				return err
			}
		}
		giveSlotBack()
		return retry.RetryableError(errors.New(last.Message()))
	})
	if released {
		_ = spec.Slot.Acquire(ctx) // the caller gets back what it held; fails only when ctx ended
	}
	switch {
	case err == nil:
		return last, nil
	case ctx.Err() != nil:
		return last, context.Cause(ctx)
	case final == nil: // the budget ended while waiting
		return last, &Error{Reason: ReasonBudget, Attempts: n, Last: last}
	}
	return last, final
}

// Pause waits d or until ctx ends (returning its cause), giving slot (if
// any) back meanwhile and taking it again afterwards.
func Pause(ctx context.Context, d time.Duration, slot Slot) error {
	if slot != nil && d > 0 {
		slot.Release()
		defer slot.Acquire(ctx) //nolint:errcheck // fails only when ctx ended, reported below
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// runOnce runs one attempt through the breaker.
func (s Spec) runOnce(ctx context.Context, n int, attempt AttemptFunc) Outcome {
	if s.Breaker == nil {
		if s.Started != nil {
			s.Started(n)
		}
		return attempt(ctx, n)
	}
	ticket, err := s.Breaker.Allow()
	if err != nil {
		return Outcome{Attempt: n, Kind: KindCircuitOpen, ExitCode: -1, Err: err} // breaker.ErrOpen
	}
	if s.Started != nil {
		s.Started(n)
	}
	o := attempt(ctx, n)
	ticket.Done(breaker.ResultOf(ctx, o.Failed())) // a kill by agent_timeout or retry_budget is a failure
	return o
}

// decide applies the policies to a failed attempt. When no policy accepts
// it and a retry_on when could not be evaluated, the reason says so.
func (s Spec) decide(ctx context.Context, o Outcome, failures []int, elapsed, budget time.Duration) Decision {
	d := Decision{Attempt: o.Attempt, Policy: -1, Action: "stop", Failure: o}
	switch {
	case ctx.Err() != nil && errors.Is(context.Cause(ctx), ErrBudgetExhausted):
		d.Reason = ReasonBudget
		return d
	case ctx.Err() != nil:
		d.Reason = ReasonCanceled
		return d
	case len(s.Policies) == 0:
		d.Reason = ReasonNotRetryable
		return d
	case s.Disabled:
		d.Reason = ReasonDisabled
		return d
	}
	var matchErr error // the first matcher that could not be evaluated
	for i, p := range s.Policies {
		matcher, ok, err := p.accepts(o)
		if !ok {
			matchErr = cmp.Or(matchErr, err)
			continue
		}
		d.Policy, d.Matcher, d.Limit = i, matcher, p.Attempts
		failures[i]++
		d.Count = failures[i]
		if failures[i] >= p.Attempts {
			d.Reason = ReasonExhausted
			if o.Kind == KindCircuitOpen {
				d.Reason = ReasonCircuitOpen
			}
			return d
		}
		d.Delay, d.Reason = p.Delay(failures[i], s.rand), "matched any failure"
		if matcher != "" {
			d.Reason = "matched " + matcher
		}
		if p.RetryAfter {
			if wait, ok := requestedDelay(o); ok {
				d.Delay, d.Reason = wait, "retry-after"
			}
		}
		if budget > 0 && elapsed+d.Delay >= budget {
			d.Reason = ReasonBudget
			return d
		}
		d.Action = "retry"
		return d
	}
	switch {
	case o.Kind == KindCircuitOpen:
		d.Reason = ReasonCircuitOpen
	case matchErr != nil:
		d.Reason = ReasonNotRetryable + ": " + matchErr.Error()
	default:
		d.Reason = ReasonNotRetryable
	}
	return d
}

func (s Spec) rand() float64 {
	if s.Rand == nil {
		return 0.5
	}
	return s.Rand()
}

// budget is the strictest retry_budget among the policies (0 = none).
func (s Spec) budget() time.Duration {
	var b time.Duration
	for _, p := range s.Policies {
		if p.Budget > 0 && (b == 0 || p.Budget < b) {
			b = p.Budget
		}
	}
	return b
}
