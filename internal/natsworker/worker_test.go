package natsworker

import (
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/runnerdev/runner/internal/dispatchtest"
	"github.com/runnerdev/runner/internal/natsconn"
	"github.com/runnerdev/runner/internal/natstest"
	"github.com/runnerdev/runner/internal/testkit"
)

// A worker that ends after IdleExit without a task leaves nothing of its
// own running: its watch of the jobs bucket ends with Run.
func TestWorkerIdleExitEndsItsGoroutines(t *testing.T) {
	srv := natstest.Start(t)
	w, err := NewWorker(t.Context(), WorkerOptions{Conn: srv.Connect(t), Queue: natsconn.DefaultQueue, Concurrency: 1, Name: "idle",
		AckWait: testkit.Scale(2 * time.Second), IdleExit: time.Millisecond, StoreDir: t.TempDir(), Log: io.Discard})
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

// The tail of an attempt's output that goes back with its result says,
// in a first line, how much of it it left out: the coordinator's item
// log (results.json's json_log_location) holds only the tail.
func TestReadTailSaysWhatItLeftOut(t *testing.T) {
	path := filepath.Join(t.TempDir(), "item.log")
	if err := os.WriteFile(path, []byte("earlier attempt\n0123456789abcdef"), 0o600); err != nil {
		t.Fatal(err)
	}
	from := int64(len("earlier attempt\n"))
	if got := readTail(path, from, 16); got != "0123456789abcdef" {
		t.Errorf("whole: %q", got)
	}
	want := "[runner: the first 10 bytes of this attempt's output left out, its last 6 follow]\nabcdef"
	if got := readTail(path, from, 6); got != want {
		t.Errorf("cut: %q, want %q", got, want)
	}
}
