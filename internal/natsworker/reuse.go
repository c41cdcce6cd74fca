package natsworker

import (
	"sync"
	"time"
)

// reusedGoroutines run functions on goroutines that, each done, wait a
// while for the next: a task's deep stack, grown once, serves the tasks
// after it (a new goroutine per task grew its stack again each time, a
// twentieth of a worker's CPU on short items).
type reusedGoroutines struct {
	work chan func()
	done chan struct{}
	idle time.Duration // how long a goroutine waits for the next before it ends
	wg   sync.WaitGroup
}

func newReusedGoroutines(idle time.Duration) *reusedGoroutines {
	return &reusedGoroutines{work: make(chan func()), done: make(chan struct{}), idle: idle}
}

// run runs f on a goroutine waiting for work, else on a new one.
func (g *reusedGoroutines) run(f func()) {
	select {
	case g.work <- f:
	default:
		g.wg.Go(func() { g.serve(f) })
	}
}

// serve runs f, then what comes, until none came for idle or stop.
func (g *reusedGoroutines) serve(f func()) {
	wait := time.NewTimer(g.idle)
	defer wait.Stop()
	for {
		f()
		wait.Reset(g.idle)
		select {
		case f = <-g.work:
		case <-wait.C:
			return
		case <-g.done:
			return
		}
	}
}

// stop ends the goroutines, once all functions given to run have ended.
func (g *reusedGoroutines) stop() {
	close(g.done)
	g.wg.Wait()
}
