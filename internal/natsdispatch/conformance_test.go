package natsdispatch

import (
	"testing"

	"github.com/runnerdev/runner/internal/dispatchtest"
	"github.com/runnerdev/runner/internal/itemtask"
	"github.com/runnerdev/runner/internal/job"
	"github.com/runnerdev/runner/internal/natstest"
	"github.com/runnerdev/runner/internal/state"
)

// The NATS dispatcher, with a worker in this process on an in-process
// server, honours the item seam's contract as far as its capabilities
// go.
func TestNATSConformance(t *testing.T) {
	srv := natstest.Start(t)
	dispatchtest.Run(t, dispatchtest.Subject{
		Backend: func(t *testing.T, j *job.Job) itemtask.Backend {
			runWorker(t, srv, DefaultQueue)
			return New(Options{Conn: srv.Connect(t), Dist: state.Dist{Queue: DefaultQueue}})
		},
		Frames: "github.com/runnerdev/runner/internal/natsdispatch.(*Dispatcher).",
	})
}
