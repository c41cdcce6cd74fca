package mapreduce

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/runnerdev/runner/internal/job"
	"github.com/runnerdev/runner/internal/testkit"
	"github.com/runnerdev/runner/retryv2"
)

// slowDLQ is a DLQ whose Add waits until next is closed or patience has
// passed (then waited notes it).
type slowDLQ struct {
	*fakeDLQ
	next     chan struct{}
	patience time.Duration
	waited   atomic.Bool
}

func (q *slowDLQ) Add(items ...DeadLetter) error {
	select {
	case <-q.next:
	case <-time.After(q.patience):
		q.waited.Store(true)
	}
	return q.fakeDLQ.Add(items...)
}

// An item that failed gives its slot back while its DLQ commit is
// pending: with max_parallel 1, the next item runs before the failed one
// is durable in the DLQ (here the commit waits for it), and the failed
// item is still recorded in the DLQ and counted.
func TestFailedItemGivesItsSlotWhileItsDLQCommitIsPending(t *testing.T) {
	j := startJob(t, 2, 1, "")
	q := &slowDLQ{fakeDLQ: newFakeDLQ(), next: make(chan struct{}), patience: testkit.Scale(10 * time.Second)}
	agent := agentFunc(func(ctx context.Context, it *Item, attempt int, slot retryv2.Slot) Outcome {
		if it.Index == 0 {
			return failed("first fails")
		}
		close(q.next)
		return Outcome{}
	})
	sum, err := Run(t.Context(), j, Options{DLQ: q, Dispatcher: agent.backend()})
	if q.waited.Load() {
		t.Error("the next item waited for the failed item's DLQ commit")
	}
	if sum.Items.DLQ != 1 || sum.Items.Succeeded != 1 || len(q.items) != 1 {
		t.Errorf("counts %+v, %d in the DLQ (%v)", sum.Items, len(q.items), err)
	}
}

// The failure that reaches max_failures stops the job before its slot
// runs another item, though its DLQ commit is still pending: no item
// starts while the commit waits (as long as the test lets it), and the
// items after it stay pending.
func TestStopComesBeforeTheFailedItemsSlotIsGivenBack(t *testing.T) {
	j := startJob(t, 5, 1, "max_failures: 1\n")
	var started atomic.Int32
	var once sync.Once
	q := &slowDLQ{fakeDLQ: newFakeDLQ(), next: make(chan struct{}), patience: 200 * time.Millisecond}
	agent := agentFunc(func(ctx context.Context, it *Item, attempt int, slot retryv2.Slot) Outcome {
		if started.Add(1) > 1 {
			once.Do(func() { close(q.next) }) // an item started while the DLQ commit waited
			return Outcome{}
		}
		return failed("first fails")
	})
	sum, err := Run(t.Context(), j, Options{DLQ: q, Dispatcher: agent.backend()})
	var stopped *StoppedError
	if !errors.As(err, &stopped) || stopped.Rule != "max_failures" {
		t.Fatalf("err = %v, want a max_failures stop", err)
	}
	if n := started.Load(); n != 1 {
		t.Errorf("%d items started, want 1: the stop came after the slot was given back", n)
	}
	if want := (job.ItemCounts{Total: 5, Failed: 1, DLQ: 1, Pending: 4}); sum.Items != want {
		t.Errorf("counts %+v, want %+v", sum.Items, want)
	}
}
