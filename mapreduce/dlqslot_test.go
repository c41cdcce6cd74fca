package mapreduce

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/runnerdev/runner/internal/testkit"
	"github.com/runnerdev/runner/retryv2"
)

// slowDLQ is a DLQ whose Add waits until next is closed (or 10 s,
// scaled, has passed: then waited notes it).
type slowDLQ struct {
	*fakeDLQ
	next   chan struct{}
	waited atomic.Bool
}

func (q *slowDLQ) Add(items ...DeadLetter) error {
	select {
	case <-q.next:
	case <-time.After(testkit.Scale(10 * time.Second)):
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
	q := &slowDLQ{fakeDLQ: newFakeDLQ(), next: make(chan struct{})}
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
