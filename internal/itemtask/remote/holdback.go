package remote

import (
	"sync"
	"time"
)

// heldSends are a run's sends kept back until its hold is over (release)
// or dropped with the run (drop).
type heldSends struct {
	mu       sync.Mutex
	pending  []func()
	timer    *time.Timer
	released bool // sends go at once
	dropped  bool // sends go nowhere
}

// holdFor keeps sends back for d; 0: not at all.
func holdFor(d time.Duration) *heldSends {
	h := &heldSends{released: d == 0}
	if d == 0 {
		return h
	}
	h.mu.Lock() // the timer's release waits for it
	defer h.mu.Unlock()
	h.timer = time.AfterFunc(d, h.release)
	return h
}

// send sends, now if the hold is over, else when it is; in the order of
// the calls.
func (h *heldSends) send(f func()) {
	h.mu.Lock()
	defer h.mu.Unlock()
	switch {
	case h.dropped:
	case h.released:
		f()
	default:
		h.pending = append(h.pending, f)
	}
}

// release ends the hold: what was kept goes now, in order.
func (h *heldSends) release() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.stopTimer()
	if h.released || h.dropped {
		return
	}
	h.released = true
	for _, f := range h.pending {
		f()
	}
	h.pending = nil
}

// drop forgets what was kept and anything sent after: the run ended, and
// its result says it all.
func (h *heldSends) drop() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.stopTimer()
	h.dropped = true
	h.pending = nil
}

// stopTimer stops the hold's timer, if it has one.
func (h *heldSends) stopTimer() {
	if h.timer != nil {
		h.timer.Stop()
	}
}
