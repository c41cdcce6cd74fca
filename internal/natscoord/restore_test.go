package natscoord

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/runnerdev/runner/internal/natsconn"
	"github.com/runnerdev/runner/internal/state"
)

// A server that loses its streams, consumers and bucket while a job runs
// (as one restarted on an empty store does) gets them back from the live
// worker and coordinator, the coordinator's spec and lost tasks with
// them, and the job ends with every item done. TestNATSServerStoreLost
// does it to a server process restarted on a new store.
func TestLostObjectsAreMadeAgain(t *testing.T) {
	srv, js, _ := serve(t)
	dir := t.TempDir()
	t.Chdir(dir)
	const items = 4
	file := fmt.Sprintf(`mode: mapreduce
map:
  input: seq 1 %[1]d
  max_parallel: 2
  agent_template:
    - shell: |
        touch %[2]s/started.${item}
        for i in $(seq 1000); do [ -e %[2]s/go ] && exit 0; sleep 0.01; done
        exit 9
`, items, dir)
	j := startJob(t, dir, file)
	runWorker(t, srv, natsconn.DefaultQueue)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	done := runMap(ctx, j, Options{Conn: srv.Connect(t), Dist: state.Dist{Queue: natsconn.DefaultQueue}, Warn: io.Discard})
	if !eventually(func() bool { m, _ := filepath.Glob("started.*"); return len(m) > 0 }) {
		select {
		case r := <-done:
			t.Fatalf("no item started; the run ended: %v, %+v", r.err, r.sum.Items)
		default:
			t.Fatal("no item started within 10 s")
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
	r := <-done
	if r.err != nil || r.sum.Items.Succeeded != items {
		t.Fatalf("run: %v, items %+v; want %d succeeded", r.err, r.sum.Items, items)
	}
	if err := j.Finish(state.Completed, 0, nil, nil); err != nil {
		t.Fatal(err)
	}
}
