package mapreduce

import "context"

// Slots are the places to run a command in: a job's max_parallel, a NATS
// worker's --concurrency.
type Slots chan struct{}

// Hold returns a hold on one of s, not yet acquired.
func (s Slots) Hold() *Slot { return &Slot{sem: s} }

// Slot is one item's hold on a place (a retryv2.Slot). It is used by the
// item's goroutine only; Acquire on a held slot and Release on a free one
// do nothing.
type Slot struct {
	sem  Slots
	held bool
}

func (s *Slot) Acquire(ctx context.Context) error {
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

func (s *Slot) Release() {
	if s.held {
		<-s.sem
		s.held = false
	}
}
