package natsworker

import (
	"io"
	"testing"
	"time"

	"github.com/runnerdev/runner/internal/dispatchtest"
	"github.com/runnerdev/runner/internal/natsconn"
	"github.com/runnerdev/runner/internal/natstest"
)

// A worker that ends after IdleExit without a task leaves nothing of its
// own running: its watch of the jobs bucket ends with Run.
func TestWorkerIdleExitEndsItsGoroutines(t *testing.T) {
	srv := natstest.Start(t)
	w, err := NewWorker(t.Context(), WorkerOptions{Conn: srv.Connect(t), Queue: natsconn.DefaultQueue, Concurrency: 1, Name: "idle",
		AckWait: 2 * time.Second, IdleExit: time.Millisecond, StoreDir: t.TempDir(), Log: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Run(t.Context()); err != nil {
		t.Fatal(err)
	}
	if n := dispatchtest.Goroutines("github.com/runnerdev/runner/internal/natsworker.(*Worker)."); n != 0 {
		t.Errorf("%d goroutines of the worker run on after Run returned", n)
	}
}
