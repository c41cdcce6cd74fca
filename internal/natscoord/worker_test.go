package natscoord

import (
	"context"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/runnerdev/runner/internal/natsconn"
	"github.com/runnerdev/runner/internal/natsworker"
	"github.com/runnerdev/runner/internal/state"
	"github.com/runnerdev/runner/internal/testkit"
)

// logBuffer is a worker's log, read while the worker writes it.
type logBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// A worker logs one line per task, with its job, item, result and
// duration, and every SummaryEvery the tasks ended and the slots busy.
func TestWorkerLogsTasksAndSummaries(t *testing.T) {
	srv, _, j := serveJob(t, `mode: mapreduce
map:
  input: seq 1 3
  agent_template:
    - shell: "test ${item} != 2"
`)
	log := &logBuffer{}
	w, err := natsworker.NewWorker(t.Context(), natsworker.WorkerOptions{Conn: srv.Connect(t), Queue: natsconn.DefaultQueue, Concurrency: 2, Name: "w",
		AckWait: testkit.Scale(natsconn.DefaultAckWait), StoreDir: t.TempDir(), Log: log, Open: openPortable("w"), SummaryEvery: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	stopped := make(chan error)
	go func() { stopped <- w.Run(ctx) }()
	ctx2, cancel := context.WithTimeout(t.Context(), testkit.Scale(time.Minute))
	defer cancel()
	if r := <-runMap(ctx2, j, Options{Conn: srv.Connect(t), Dist: state.Dist{Queue: natsconn.DefaultQueue}}); r.err != nil {
		t.Fatal(r.err)
	}
	summary := "runner worker w: 3 tasks ended since the start (2 succeeded, 1 failed, 0 stopped); 0 of 2 slots busy\n"
	seen := testkit.Poll(func() bool { return strings.Contains(log.String(), summary) })
	stop()
	<-stopped
	out := log.String()
	if !seen {
		t.Errorf("no summary %q in:\n%s", summary, out)
	}
	if !strings.HasSuffix(out, summary) {
		t.Errorf("the worker did not end with its summary:\n%s", out)
	}
	for _, want := range []string{
		`(?m)^runner worker w: job j item 1: succeeded in [0-9.]+m?s$`,
		`(?m)^runner worker w: job j item 2: failed in [0-9.]+m?s: step "map step 1" failed: exit status 1$`,
		`(?m)^runner worker w: job j item 3: succeeded in [0-9.]+m?s$`,
	} {
		if n := len(regexp.MustCompile(want).FindAllString(out, -1)); n != 1 {
			t.Errorf("%d lines match %s, want 1, in:\n%s", n, want, out)
		}
	}
}
