package retryv2

import (
	"math"
	"time"
)

// Delay is the pause after the k-th failure handled by p (k >= 1): the
// strategy's base delay capped at MaxDelay, then jittered and clamped to
// [0, MaxDelay]. rnd returns uniform values in [0, 1); it is called once
// when the policy jitters and never otherwise. No arithmetic overflows for
// any k. A strategy that Validate refuses waits MaxDelay.
func (p Policy) Delay(k int, rnd func() float64) time.Duration {
	d := p.baseDelay(k)
	switch p.Jitter {
	case ProportionalJitter:
		r := float64(d) * p.JitterFactor
		d = capped(float64(d)+(rnd()-0.5)*r, p.MaxDelay)
	case FullJitter:
		d = capped(rnd()*float64(d), p.MaxDelay)
	case NoJitter:
		// The delay as computed.
	default:
		// Validate refuses any other mode; it does not jitter either.
	}
	return d
}

// baseDelay is min(base(k), MaxDelay) for the policy's strategy.
func (p Policy) baseDelay(k int) time.Duration {
	if k < 1 {
		k = 1
	}
	initial, limit := float64(p.InitialDelay), p.MaxDelay
	switch p.Backoff.Strategy {
	case Fixed:
		return capped(initial, limit)
	case Linear:
		inc := p.Backoff.Increment
		if inc == 0 {
			inc = p.InitialDelay
		}
		return capped(initial+float64(inc)*float64(k-1), limit)
	case Fibonacci:
		return capped(initial*fibonacci(k, float64(limit)/math.Max(initial, 1)), limit)
	case Custom:
		if k <= len(p.Backoff.Delays) {
			return capped(float64(p.Backoff.Delays[k-1]), limit)
		}
		return limit
	case Exponential:
		base := p.Backoff.Base
		if base == 0 {
			base = DefaultBase
		}
		return capped(initial*math.Pow(base, float64(k-1)), limit)
	}
	// Validate refuses any other strategy. Delay still answers one, with
	// the longest pause the policy allows, rather than borrow the curve of
	// a strategy nobody wrote.
	return limit
}

// fibonacci returns fib(k) with fib(1) = fib(2) = 1, stopping early once it
// passes stop (the caller caps the result anyway).
func fibonacci(k int, stop float64) float64 {
	a, b := 1.0, 1.0
	for i := 2; i < k && a <= stop; i++ {
		a, b = b, a+b
	}
	if k <= 2 {
		return 1
	}
	return b
}

// capped converts a float duration, clamping it to [0, limit].
func capped(d float64, limit time.Duration) time.Duration {
	if math.IsNaN(d) || d <= 0 {
		return 0
	}
	if d >= float64(limit) {
		return limit
	}
	return time.Duration(d)
}
