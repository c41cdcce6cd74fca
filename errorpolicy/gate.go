package errorpolicy

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/runnerdev/runner/internal/breaker"
)

// Gate is the workflow circuit breaker in front of item dispatch: after
// FailureThreshold consecutive item failures it opens and admits no new
// item for Timeout; then it admits up to HalfOpenRequests probes at a time;
// SuccessThreshold consecutive probe successes close it and a failure
// re-opens it. Admit waits for the breaker where a step's breaker would
// refuse.
type Gate struct {
	b        *breaker.Breaker
	timeout  time.Duration
	openedAt atomic.Int64 // UnixNano of the last opening

	mu      sync.Mutex
	changed chan struct{} // closed (and replaced) whenever an item ends
}

// NewGate builds a gate. onChange hears every transition as "open",
// "half_open" or "closed"; it runs with the breaker's lock held and must
// not call back into the gate.
func NewGate(cfg breaker.Config, onChange func(to string)) *Gate {
	g := &Gate{timeout: cfg.Timeout, changed: make(chan struct{})}
	g.b = breaker.New("workflow", cfg, func(to string) {
		if to == "open" {
			g.openedAt.Store(time.Now().UnixNano())
		}
		if onChange != nil {
			onChange(to)
		}
	})
	return g
}

// Pass admits one item. Done or Return must be called; calls after the
// first do nothing.
type Pass struct {
	g *Gate
	t *breaker.Ticket
}

// Stale reports that the breaker changed state since the pass was given
// (an item that waited for a slot meanwhile may no longer start): give it
// back with Return and ask again.
func (p *Pass) Stale() bool { return p.t.Stale() }

// Done records the result of the item the pass let run.
func (p *Pass) Done(failed bool) {
	r := breaker.Succeeded
	if failed {
		r = breaker.Failed
	}
	p.end(r)
}

// Return gives back a pass whose item did not run, or was interrupted:
// it says nothing about the items' health.
func (p *Pass) Return() { p.end(breaker.Excluded) }

func (p *Pass) end(r breaker.Result) {
	p.t.Done(r)
	p.g.wake()
}

// Admit waits until an item may start, or ctx ends (its cause is
// returned).
func (g *Gate) Admit(ctx context.Context) (*Pass, error) {
	for {
		g.mu.Lock()
		wake := g.changed // any item ending after this wakes the wait below
		g.mu.Unlock()
		open := g.b.State() == "open" // half-opens it once the timeout has passed
		if !open {
			if t, err := g.b.Allow(); err == nil {
				return &Pass{g: g, t: t}, nil
			}
			// Half-open with every probe place taken, or an item's end
			// opened it meanwhile (and closed wake).
		}
		var wait <-chan time.Time
		if open {
			// gobreaker half-opens strictly after the timeout.
			until := time.Unix(0, g.openedAt.Load()).Add(g.timeout)
			wait = time.After(time.Until(until) + time.Millisecond)
		}
		select {
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		case <-wait:
		case <-wake:
		}
	}
}

// wake wakes the waiting Admits.
func (g *Gate) wake() {
	g.mu.Lock()
	defer g.mu.Unlock()
	close(g.changed)
	g.changed = make(chan struct{})
}
