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
	openedAt atomic.Int64  // UnixNano of the last opening (set under gobreaker's lock)
	gen      atomic.Uint64 // state changes so far

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
			g.gen.Add(1)
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

// Pass admits one item. Done must be called once.
type Pass struct {
	g      *Gate
	gen    uint64
	finish func(error)
	probe  bool
	once   sync.Once
}

// Stale reports that the breaker changed state since the pass was given
// (an item that waited for a slot meanwhile may no longer start): give it
// back with Done(false) and ask again.
func (p *Pass) Stale() bool { return p.g.gen.Load() != p.gen }

// Done records the item's result; a stale pass's result is not counted.
func (p *Pass) Done(failed bool) {
	p.once.Do(func() {
		if failed {
			p.finish(errItemFailed)
		} else {
			p.finish(nil) // gobreaker ignores results from an older state
		}
		p.g.endItem(p.probe)
	})
}

// Admit waits until an item may start, or ctx ends (its cause is
// returned).
func (g *Gate) Admit(ctx context.Context) (*Pass, error) {
	for {
		g.mu.Lock()
		wake := g.changed // any item ending after this wakes the wait below
		g.mu.Unlock()
		gen := g.gen.Load()
		var wait <-chan time.Time
		switch g.cb.State() {
		case gobreaker.StateOpen:
			// gobreaker half-opens strictly after the timeout.
			until := time.Unix(0, g.openedAt.Load()).Add(g.cfg.Timeout)
			wait = time.After(time.Until(until) + time.Millisecond)
		case gobreaker.StateHalfOpen:
			if g.reserveProbe() {
				if finish, err := g.cb.Allow(); err == nil {
					return &Pass{g: g, gen: gen, finish: finish, probe: true}, nil
				}
				g.endItem(true)
			}
		default:
			if finish, err := g.cb.Allow(); err == nil {
				return &Pass{g: g, gen: gen, finish: finish}, nil
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

var errItemFailed = errors.New("item failed")
