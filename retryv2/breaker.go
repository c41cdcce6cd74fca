package retryv2

import (
	"errors"
	"sync"

	"github.com/sony/gobreaker/v2"
)

// Breaker is a command-level circuit breaker shared by every execution of a
// step in a job (all attempts, all map agents).
type Breaker struct {
	cb *gobreaker.TwoStepCircuitBreaker[struct{}]

	mu        sync.Mutex
	probes    int // attempts admitted while half-open and still running
	maxProbes int
}

// ErrCircuitOpen is the failure of an attempt refused by an open breaker.
var ErrCircuitOpen = errors.New("circuit open")

// NewBreaker builds a breaker. onChange hears every transition as "open",
// "half_open" or "closed"; it runs with the breaker's lock held and must not
// call back into the breaker.
//
// gobreaker closes a half-open breaker after MaxRequests consecutive
// successes, so MaxRequests is SuccessThreshold; the breaker itself admits
// at most HalfOpenRequests of those probes at a time.
func NewBreaker(name string, c BreakerConfig, onChange func(to string)) *Breaker {
	threshold := uint32(max(c.FailureThreshold, 1))
	return &Breaker{maxProbes: max(c.HalfOpenRequests, 1), cb: gobreaker.NewTwoStepCircuitBreaker[struct{}](gobreaker.Settings{
		Name:        name,
		MaxRequests: uint32(max(c.SuccessThreshold, 1)),
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
	probe := b.cb.State() == gobreaker.StateHalfOpen
	if probe {
		b.mu.Lock()
		if b.probes >= b.maxProbes {
			b.mu.Unlock()
			return nil, ErrCircuitOpen
		}
		b.probes++
		b.mu.Unlock()
	}
	finish, err := b.cb.Allow()
	if err != nil {
		b.endProbe(probe)
		return nil, ErrCircuitOpen
	}
	return func(failed bool) {
		b.endProbe(probe)
		if failed {
			finish(ErrCircuitOpen) // any non-nil error counts as a failure
		} else {
			finish(nil)
		}
	}, nil
}

func (b *Breaker) endProbe(probe bool) {
	if probe {
		b.mu.Lock()
		b.probes--
		b.mu.Unlock()
	}
}

// State is "closed", "open" or "half_open".
func (b *Breaker) State() string { return stateName(b.cb.State()) }
