package natsworker

import (
	"context"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// A server that answers each heartbeat two heartbeats late, within the
// lease, keeps the lease: the heartbeats do not wait for each other, and
// each answer renews it from its sending. (Each heartbeat given up after
// one heartbeat's wait, no answer ever counted, and the worker, alive,
// cut its runs off: under load every delivery of an item was cut off,
// and the item failed as lost.)
func TestHeartbeatsAnsweredLateKeepTheLease(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const every, limit = time.Second, 4 * time.Second
		ls := newLease(nil, limit, time.Now())
		var renewed atomic.Int64
		var cut error
		end := heartbeats(t.Context(), every, ls, func(ctx context.Context) error {
			select {
			case <-time.After(2 * every):
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		}, func(sent, answered time.Time) { renewed.Add(1) }, func(err error) { cut = err })
		time.Sleep(30 * time.Second)
		end()
		if cut != nil || ls.expired(time.Now()) {
			t.Errorf("the runs were cut off (%v) with every heartbeat answered within the lease", cut)
		}
		if n := renewed.Load(); n < 25 {
			t.Errorf("%d answers renewed the lease in 30 heartbeats, want each but the last two", n)
		}
	})
}

// A server that does not answer lets the lease run out: the runs are cut
// off at the first heartbeat after its end, and the heartbeats end.
func TestHeartbeatsUnansweredCutTheRunsOff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const every, limit = time.Second, 4 * time.Second
		start := time.Now()
		ls := newLease(nil, limit, start)
		var cutAt time.Time
		var cut error
		end := heartbeats(t.Context(), every, ls, func(ctx context.Context) error {
			<-ctx.Done()
			return ctx.Err()
		}, func(sent, answered time.Time) { t.Error("an unanswered heartbeat renewed the lease") }, func(err error) { cut, cutAt = err, time.Now() })
		time.Sleep(time.Minute)
		end()
		if cut != errCutOff {
			t.Fatalf("the runs were stopped with %v, want errCutOff", cut)
		}
		if d := cutAt.Sub(start); d != limit+every {
			t.Errorf("the runs were cut off after %v, want %v: the first heartbeat after the lease's end", d, limit+every)
		}
	})
}
