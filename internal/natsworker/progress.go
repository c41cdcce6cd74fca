package natsworker

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/runnerdev/runner/internal/itemtask"
	"github.com/runnerdev/runner/internal/itemtask/remote"
)

// holdBack is how long a run keeps back the events it tells its
// coordinator as they come (remote.NewReporter): a run that ends sooner
// sends none, its result carries them, and a run that lasts longer sends
// those it kept then and the rest as they come. Most items of a large map
// end within it: four messages less per item on the worker, the server
// and the coordinator. (The run's beat is not held: a worker lost at once
// is shown stranded.)
const holdBack = 20 * time.Millisecond

// runSlot is a run's hold on its places: the worker's own (one of
// --concurrency) and the job's (one of max_parallel, held by the
// coordinator, through the run's reporter). Both are given back while a
// step waits out a delay, and taken again, the job's first, before it
// goes on. It is used by the run's goroutine only.
type runSlot struct {
	rp       *remote.Reporter
	own      *itemtask.Hold
	waiting  *atomic.Int64 // the worker's runs whose own slot is given back
	released bool
}

func (s *runSlot) Release() {
	if s.released {
		return
	}
	s.released = true
	s.waiting.Add(1)
	s.own.Release()
	s.rp.Release()
}

// Acquire takes the job's slot back (going on when no coordinator
// listens or knows the run), then the worker's own.
func (s *runSlot) Acquire(ctx context.Context) error {
	if !s.released {
		return nil
	}
	if err := s.rp.Acquire(ctx); err != nil {
		return err
	}
	if err := s.own.Acquire(ctx); err != nil {
		return err
	}
	s.released = false
	s.waiting.Add(-1)
	return nil
}

// end ends the hold of a run that stopped while its slot was given back.
func (s *runSlot) end() {
	if s.released {
		s.released = false
		s.waiting.Add(-1)
	}
}
