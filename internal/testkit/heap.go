package testkit

import (
	"fmt"
	"runtime"
	"runtime/metrics"
	"sync/atomic"
	"testing"
	"time"
)

// PeakLiveHeap runs fn while another goroutine collects garbage about
// every millisecond, and returns the most heap held across two
// collections in a row (the runtime's /gc/heap/live:bytes). A collection
// counts live all that fn allocates while it marks: on busy cores a slow
// one counts hundreds of KB of buffers merely passing through, and a
// longer run, sampled more often, catches more such spikes. The lower of
// two back-to-back collections keeps what fn holds and drops most of what
// passed during one of them.
func PeakLiveHeap(fn func()) uint64 {
	var peak atomic.Uint64
	stop, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		live := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
		held := func() uint64 {
			runtime.GC()
			metrics.Read(live)
			return live[0].Value.Uint64()
		}
		for {
			if v := min(held(), held()); v > peak.Load() {
				peak.Store(v)
			}
			select {
			case <-stop:
				return
			case <-time.After(time.Millisecond):
			}
		}
	}()
	fn()
	close(stop)
	<-stopped
	return peak.Load()
}

// BoundHeap makes the test binary die, with a message naming the test,
// as soon as its heap passes limit bytes, until the test ends: for a
// test whose code, were it to regress, could take all of the machine's
// memory (a YAML alias bomb) rather than fail. The heap is read every
// millisecond, so it passes limit by what the test allocates in one.
func BoundHeap(t testing.TB, limit uint64) {
	name := t.Name()
	stop := make(chan struct{})
	t.Cleanup(func() { close(stop) })
	go func() {
		heap := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
		for {
			metrics.Read(heap)
			if v := heap[0].Value.Uint64(); v > limit {
				panic(fmt.Sprintf("%s: the heap holds %d MiB, more than the test's bound of %d MiB", name, v>>20, limit>>20))
			}
			select {
			case <-stop:
				return
			case <-time.After(time.Millisecond):
			}
		}
	}()
}
