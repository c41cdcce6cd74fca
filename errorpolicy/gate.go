package errorpolicy

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sony/gobreaker/v2"
)

// Gate is the workflow circuit breaker in front of item dispatch: after
// FailureThreshold consecutive item failures it opens and admits no new
// item for Timeout; then it admits up to HalfOpenRequests probes at a time;
// SuccessThreshold consecutive probe successes close it and a failure
// re-opens it. Built on gobreaker, whose half-open state closes after
// MaxRequests consecutive successes (so MaxRequests is SuccessThreshold);
// the Gate itself bounds the probes running at once.
type Gate struct {
	cb       *gobreaker.TwoStepCircuitBreaker[struct{}]
	cfg      Breaker
	openedAt atomic.Int64 // UnixNano of the last opening (set under gobreaker's lock)

	// mu guards probes and changed; it is never held across a call into
	// gobreaker, whose state-change callback runs under gobreaker's lock.
	mu      sync.Mutex
	probes  int           // admitted while half-open, still running
	changed chan struct{} // closed (and replaced) whenever an item ends
}

// NewGate builds a gate. onChange hears every transition as "open",
// "half_open" or "closed"; it runs with the breaker's lock held and must
// not call back into the gate.
func NewGate(cfg Breaker, onChange func(to string)) *Gate {
	g := &Gate{cfg: cfg, changed: make(chan struct{})}
	threshold := uint32(max(cfg.FailureThreshold, 1))
	g.cb = gobreaker.NewTwoStepCircuitBreaker[struct{}](gobreaker.Settings{
		Name:        "workflow",
		MaxRequests: uint32(max(cfg.SuccessThreshold, 1)),
		Timeout:     cfg.Timeout,
		ReadyToTrip: func(c gobreaker.Counts) bool { return c.ConsecutiveFailures >= threshold },
		OnStateChange: func(_ string, _, to gobreaker.State) {
			if to == gobreaker.StateOpen {
				g.openedAt.Store(time.Now().UnixNano())
			}
			if onChange != nil {
				onChange(stateName(to))
			}
		},
	})
	return g
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

// State is "closed", "open" or "half_open".
func (g *Gate) State() string { return stateName(g.cb.State()) }

// Admit waits until an item may start, or ctx ends (its cause is
// returned). done records the item's result and must be called once.
func (g *Gate) Admit(ctx context.Context) (done func(failed bool), err error) {
	for {
		g.mu.Lock()
		wake := g.changed // any item ending after this wakes the wait below
		g.mu.Unlock()
		var wait <-chan time.Time
		switch g.cb.State() {
		case gobreaker.StateOpen:
			// gobreaker half-opens strictly after the timeout.
			until := time.Unix(0, g.openedAt.Load()).Add(g.cfg.Timeout)
			wait = time.After(time.Until(until) + time.Millisecond)
		case gobreaker.StateHalfOpen:
			if g.reserveProbe() {
				if finish, err := g.cb.Allow(); err == nil {
					return g.doneFunc(finish, true), nil
				}
				g.endItem(true)
			}
		default:
			if finish, err := g.cb.Allow(); err == nil {
				return g.doneFunc(finish, false), nil
			}
		}
		select {
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		case <-wait:
		case <-wake:
		}
	}
}

// reserveProbe takes one of the half-open probe places, if one is free.
func (g *Gate) reserveProbe() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.probes >= max(g.cfg.HalfOpenRequests, 1) {
		return false
	}
	g.probes++
	return true
}

// endItem frees a probe place and wakes the waiting Admits.
func (g *Gate) endItem(probe bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if probe {
		g.probes--
	}
	close(g.changed)
	g.changed = make(chan struct{})
}

func (g *Gate) doneFunc(finish func(error), probe bool) func(failed bool) {
	var once sync.Once
	return func(failed bool) {
		once.Do(func() {
			if failed {
				finish(errItemFailed)
			} else {
				finish(nil)
			}
			g.endItem(probe)
		})
	}
}

var errItemFailed = errors.New("item failed")
