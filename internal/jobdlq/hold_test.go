package jobdlq

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/runnerdev/runner/dlq"
	"github.com/runnerdev/runner/internal/job"
	"github.com/runnerdev/runner/internal/jsonvalue"
	"github.com/runnerdev/runner/internal/state"
	"github.com/runnerdev/runner/internal/testkit"
	"github.com/runnerdev/runner/mapreduce"
	"github.com/runnerdev/runner/workflow"
)

// lockedBuffer is a strings.Builder for two goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// countOpens makes openDB count the DLQ opens of this package.
func countOpens(t *testing.T) *atomic.Int32 {
	var n atomic.Int32
	openDB = func(path string, opts dlq.Options) (*dlq.DB, error) {
		n.Add(1)
		return dlq.Open(path, opts)
	}
	t.Cleanup(func() { openDB = dlq.Open })
	return &n
}

// failedJob runs a MapReduce job of n items that all fail into its DLQ
// until the file it returns exists, and returns the job's store.
func failedJob(t *testing.T, n int) (store state.Store, fixed string) {
	t.Helper()
	dir := t.TempDir()
	fixed = filepath.Join(dir, "fixed")
	src := fmt.Sprintf("mode: mapreduce\nmap:\n  input: seq 1 %d\n  max_parallel: 2\n  agent_template: [{shell: '[ -e %s ]'}]\n", n, fixed)
	wf, err := workflow.Parse("t.yml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	store = state.Store{Dir: filepath.Join(dir, "state")}
	j, err := job.Start(wf, []byte(src), job.Options{Store: store, JobID: "j", Stdout: io.Discard, Stderr: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	sum, err := mapreduce.Run(t.Context(), j, mapreduce.Options{DLQ: Open(t.Context(), "j", j.Layout().DLQ, io.Discard), Dispatcher: mapreduce.InProcess(nil)})
	if err != nil || sum.Items.DLQ != n {
		t.Fatalf("run: %v, %+v; want %d items in the DLQ", err, sum.Items, n)
	}
	const exitItemsInDLQ = 3 // cmd's
	if err := j.Finish(state.Completed, exitItemsInDLQ, nil, nil); err != nil {
		t.Fatal(err)
	}
	return store, fixed
}

// selectAll reads every item of a queue, as `dlq retry` does.
func selectAll(q *Queue) func() ([]*mapreduce.Item, error) {
	return func() (items []*mapreduce.Item, err error) {
		err = q.View(func(d *dlq.DB) error {
			return d.List(func(it dlq.Item) bool {
				v, _ := jsonvalue.Decode(it.Item)
				items = append(items, &mapreduce.Item{Index: it.ItemIndex, ID: it.ItemID, Raw: it.Item, Value: v})
				return true
			})
		})
		return items, err
	}
}

// A dlq retry opens the DLQ once, whatever the number of items it runs
// (it once reopened it for every claim, removal and release, and its own
// items waited on each other's file lock).
func TestRetryOpensTheDLQOnce(t *testing.T) {
	const n = 30
	store, fixed := failedJob(t, n)
	if err := os.WriteFile(fixed, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	j, err := job.Attach("j", job.Options{Store: store, Stdout: io.Discard, Stderr: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	opens := countOpens(t)
	q := Open(t.Context(), "j", j.Layout().DLQ, io.Discard)
	if err := q.Hold("test retry", 0); err != nil {
		t.Fatal(err)
	}
	res, err := mapreduce.RetryDLQ(t.Context(), j, q, mapreduce.RetryOptions{MaxParallel: 2, Dispatcher: mapreduce.InProcess(nil), Select: selectAll(q)})
	if err != nil || res.Succeeded != n || res.Remaining != 0 {
		t.Fatalf("retry: %v, %+v; want %d succeeded", err, res, n)
	}
	if err := q.Close(); err != nil {
		t.Fatal(err)
	}
	if got := opens.Load(); got != 1 {
		t.Errorf("a retry of %d items opened the DLQ %d times, want 1", n, got)
	}
}

// Another process asking for a held DLQ is told at once who holds it: its
// pid, command and since when; with a wait it gets the file once the
// holder lets go. A record left by a holder that died names nobody.
func TestHoldNamesTheHolder(t *testing.T) {
	path := state.LayoutOf(t.TempDir()).DLQ
	first := Open(t.Context(), "j", path, io.Discard)
	if err := first.Hold("runner dlq retry j", 0); err != nil {
		t.Fatal(err)
	}
	var stderr lockedBuffer
	second := Open(t.Context(), "j", path, &stderr)
	second.owner = "elsewhere:1:1" // another process, as far as the record goes
	err := second.Hold("runner dlq retry j", 0)
	var held *HeldError
	if !errors.As(err, &held) || held.Holder == nil {
		t.Fatalf("Hold of a held DLQ: %v, want a HeldError naming the holder", err)
	}
	want := fmt.Sprintf("process %d on ", os.Getpid())
	if msg := err.Error(); !strings.Contains(msg, want) || !strings.Contains(msg, "(runner dlq retry j) since ") {
		t.Errorf("error %q does not name the holder (%s..., its command and since when)", msg, want)
	}
	go func() {
		// Let go once the second says it waits.
		testkit.Poll(func() bool { return strings.Contains(stderr.String(), "waiting") })
		first.Close()
	}()
	if err := second.Hold("runner dlq retry j", 5*time.Minute); err != nil {
		t.Fatalf("Hold with a wait: %v", err)
	}
	if !strings.Contains(stderr.String(), "held by process") || !strings.Contains(stderr.String(), "waiting up to 5m0s") {
		t.Errorf("stderr while waiting: %q", stderr.String())
	}
	if h, ok := readHolder(state.HolderOf(path)); !ok || h.Owner != second.owner {
		t.Errorf("holder record %+v, %v; want the second holder", h, ok)
	}
	second.Close()
	if _, err := os.Stat(state.HolderOf(path)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the holder record outlives the hold: %v", err)
	}
	// A record whose process is gone is not believed.
	host, _ := os.Hostname()
	if err := writeHolder(state.HolderOf(path), Holder{Owner: host + ":999999999:1", Command: "runner dlq retry j"}); err != nil {
		t.Fatal(err)
	}
	if e := heldError(path, ""); e.Holder != nil {
		t.Errorf("a dead holder's record is believed: %v", e)
	}
}
