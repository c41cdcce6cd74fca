package mapreduce

import "context"

// slots are a job's max_parallel places to run a command in.
type slots chan struct{}

// slot is one item's hold on a place. It is used by the item's goroutine
// only; Acquire on a held slot and Release on a free one do nothing.
type slot struct {
	sem  slots
	held bool
}

func (s *slot) Acquire(ctx context.Context) error {
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

func (s *slot) Release() {
	if s.held {
		<-s.sem
		s.held = false
	}
}
