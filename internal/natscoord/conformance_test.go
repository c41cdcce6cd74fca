package natscoord

import (
	"os"
	"testing"
	"time"

	"github.com/runnerdev/runner/internal/dispatchtest"
	"github.com/runnerdev/runner/internal/itemtask"
	"github.com/runnerdev/runner/internal/job"
	"github.com/runnerdev/runner/internal/natsconn"
	"github.com/runnerdev/runner/internal/natstest"
	"github.com/runnerdev/runner/internal/state"
)

// The NATS dispatcher, with workers in this process on an in-process
// server, honours the item seam's contract as far as its capabilities
// go. A step loses its worker by asking to be cut off the server (a file
// lost-NAME in the working directory): the task comes back to another
// worker once its ack wait is up, and after MaxDeliveries the next
// worker fails it as kind lost.
func TestNATSConformance(t *testing.T) {
	srv := natstest.Start(t)
	dispatchtest.Run(t, dispatchtest.Subject{
		Backend: func(t *testing.T, j *job.Job) itemtask.Backend {
			cuts := map[string]func(){}
			for _, name := range []string{"w1", "w2", "w3"} {
				cuts[name] = runNamedWorker(t, srv, natsconn.DefaultQueue, name)
			}
			go cutLostWorkers(t, cuts)
			return New(Options{Conn: srv.Connect(t), Dist: state.Dist{Queue: natsconn.DefaultQueue}, MaxDeliveries: 2})
		},
		Lose:   "touch lost-$RUNNER_WORKER && exec sleep 600",
		Frames: "github.com/runnerdev/runner/internal/natscoord.(*Dispatcher).",
	})
}

// cutLostWorkers cuts off the server each worker whose step asked for it,
// until the test ends.
func cutLostWorkers(t *testing.T, cuts map[string]func()) {
	for t.Context().Err() == nil {
		for name, cut := range cuts {
			if os.Remove("lost-"+name) == nil {
				cut()
			}
		}
		select {
		case <-t.Context().Done():
		case <-time.After(10 * time.Millisecond):
		}
	}
}
