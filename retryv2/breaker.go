package retryv2

import (
	"errors"

	"github.com/sony/gobreaker/v2"
)

// Breaker is a command-level circuit breaker shared by every execution of a
// step in a job (all attempts, all map agents).
type Breaker struct {
	cb *gobreaker.TwoStepCircuitBreaker[struct{}]
}

// ErrCircuitOpen is the failure of an attempt refused by an open breaker.
var ErrCircuitOpen = errors.New("circuit open")

// NewBreaker builds a breaker. onChange hears every transition as "open",
// "half_open" or "closed"; it runs with the breaker's lock held and must not
// call back into the breaker.
//
// gobreaker closes a half-open breaker after MaxRequests consecutive
// successes and admits at most MaxRequests probes, so the probes admitted
// are min(HalfOpenRequests, SuccessThreshold).
func NewBreaker(name string, c BreakerConfig, onChange func(to string)) *Breaker {
	threshold := uint32(max(c.FailureThreshold, 1))
	probes := uint32(max(c.SuccessThreshold, 1))
	return &Breaker{cb: gobreaker.NewTwoStepCircuitBreaker[struct{}](gobreaker.Settings{
		Name:        name,
		MaxRequests: probes,
		Timeout:     c.Timeout,
		ReadyToTrip: func(counts gobreaker.Counts) bool { return counts.ConsecutiveFailures >= threshold },
		OnStateChange: func(_ string, _, to gobreaker.State) {
			if onChange != nil {
				onChange(stateName(to))
			}
		},
	})}
}

func stateName(s gobreaker.State) string {
	switch s {
	case gobreaker.StateOpen:
		return "open"
	case gobreaker.StateHalfOpen:
		return "half_open"
	}
	return "closed"
}

// allow asks to run an attempt; done records its result. A refused attempt
// gets ErrCircuitOpen.
func (b *Breaker) allow() (done func(failed bool), err error) {
	finish, err := b.cb.Allow()
	if err != nil {
		return nil, ErrCircuitOpen
	}
	return func(failed bool) {
		if failed {
			finish(ErrCircuitOpen) // any non-nil error counts as a failure
		} else {
			finish(nil)
		}
	}, nil
}

// State is "closed", "open" or "half_open".
func (b *Breaker) State() string { return stateName(b.cb.State()) }
