package natscoord

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/runnerdev/runner/internal/natsconn"
	"github.com/runnerdev/runner/internal/testkit"
)

// A server that loses its streams, consumers and bucket while a job runs
// (as one restarted on an empty store does) gets them back from the live
// worker and coordinator, the coordinator's spec and lost tasks with
// them, and the job ends with every item done. TestNATSServerStoreLost
// does it to a server process restarted on a new store.
func TestLostObjectsAreMadeAgain(t *testing.T) {
	srv, js, _ := serve(t)
	dir := jobDir(t)
	const items = 4
	j := startJob(t, dir, heldItems(dir, items, 2, 1000))
	runWorker(t, srv, natsconn.DefaultQueue)
	done := startMap(t, j, 2*time.Minute, Options{Conn: srv.Connect(t)})
	if !testkit.Poll(func() bool { m, _ := filepath.Glob("started.*"); return len(m) > 0 }) {
		select {
		case r := <-done:
			t.Fatalf("no item started; the run ended: %v, %+v", r.err, r.sum.Items)
		default:
			t.Fatal("no item started")
		}
	}
	for _, stream := range []string{natsconn.TasksStream, natsconn.ResultsStream, "KV_" + natsconn.JobsBucket} {
		if err := js.DeleteStream(t.Context(), stream); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile("go", nil, 0o600); err != nil {
		t.Fatal(err)
	}
	finishSucceeded(t, j, <-done, items)
}
