package testkit

import (
	"runtime"
	"runtime/metrics"
	"sync/atomic"
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
