package itemtask

import "context"

// Slots are the places to run a command in: a job's max_parallel, a NATS
// worker's --concurrency.
type Slots chan struct{}

// Hold returns a hold on one of s, not yet acquired.
func (s Slots) Hold() *Hold { return &Hold{sem: s} }

// Hold is one item's hold on a place (a Slot). It is used by the item's
// goroutine only; Acquire on a held slot and Release on a free one do
// nothing.
type Hold struct {
	sem  Slots
	held bool
}

func (s *Hold) Acquire(ctx context.Context) error {
	if s.held {
		return nil
	}
	select {
	case s.sem <- struct{}{}:
		s.held = true
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

func (s *Hold) Release() {
	if s.held {
		<-s.sem
		s.held = false
	}
}
