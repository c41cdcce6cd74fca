package natsworker

import (
	"sync"
	"time"
)

// holdBack is how long a run keeps back the events it tells its
// coordinator as they come: a run that ends sooner sends none, its result
// carries them, and a run that lasts longer sends those it kept then and
// the rest as they come. Most items of a large map end within it: four
// messages less per item on the worker, the server and the coordinator.
// (The run's beat is not held: a worker lost at once is shown stranded.)
const holdBack = 20 * time.Millisecond

// heldSends are a run's sends kept back until its hold is over (release)
// or dropped with the run (drop).
type heldSends struct {
	mu       sync.Mutex
	pending  []func()
	timer    *time.Timer
	released bool // sends go at once
	dropped  bool // sends go nowhere
}

// holdFor keeps sends back for d.
func holdFor(d time.Duration) *heldSends {
	h := &heldSends{}
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
	h.timer.Stop()
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
	h.timer.Stop()
	h.dropped = true
	h.pending = nil
}
