package cmd

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"math"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/runnerdev/runner/dlq"
	"github.com/runnerdev/runner/internal/jobdlq"
	"github.com/runnerdev/runner/internal/state"
	"github.com/runnerdev/runner/internal/testkit"
)

// bigDLQJob makes a completed MapReduce job whose n items all ended in
// its DLQ, each with a few KB of stderr, settled as the map phase leaves
// it (jobdlq.Queue.MarkSettled).
func bigDLQJob(t *testing.T, dir string, n int) *state.Job {
	t.Helper()
	j, err := state.Store{Dir: dir}.Create(state.Meta{ID: "big", File: "w.yml", Workflow: "w", Mode: "mapreduce",
		Status: state.Completed, Items: &state.ItemCounts{Total: n, Failed: n, DLQ: n}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	j.Unlock()
	d, err := dlq.Open(j.Layout().DLQ, dlq.Options{})
	if err != nil {
		t.Fatal(err)
	}
	stderr := strings.Repeat("error: it failed\n", 200)
	at := time.Date(2026, 12, 7, 3, 0, 0, 0, time.UTC)
	var entries []dlq.Entry
	var recs []state.ItemRecord
	for i := range n {
		id := "item_" + strconv.Itoa(i)
		entries = append(entries, dlq.Entry{JobID: "big", ItemID: id, ItemIndex: i, Item: json.RawMessage(`{"n":` + strconv.Itoa(i) + `}`),
			Failure: dlq.Failure{At: at.Add(time.Duration(i) * time.Second), Kind: "exit", ExitCode: 1, Message: "exit status 1", StderrTail: stderr, Step: "work"}})
		recs = append(recs, state.ItemRecord{Index: i, ID: id, State: state.ItemDLQ})
	}
	if err := d.Add(entries...); err != nil {
		t.Fatal(err)
	}
	d.Close()
	if err := j.AppendItemRecords(recs...); err != nil {
		t.Fatal(err)
	}
	if err := jobdlq.Open(context.Background(), "big", j.Layout().DLQ, io.Discard).MarkSettled(j.Layout().ItemStates, j.Update); err != nil {
		t.Fatal(err)
	}
	return j
}

// allocated is what fn allocated on the heap, in bytes.
func allocated(fn func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	fn()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// `runner jobs` and `runner dlq list` read a job's settled counts and its
// DLQ's summary, not its items: what they allocate does not grow with
// the items (3,000 items hold 10 MB of stderr). A job whose item log
// changed since its counts were settled (a dlq retry killed after it
// logged a success) is settled from its files.
func TestListingsDoNotReadEveryItem(t *testing.T) {
	const n = 3000
	dir := t.TempDir()
	j := bigDLQJob(t, dir, n)
	var out bytes.Buffer
	g := &globalOptions{StateDir: dir, stdout: &out, stderr: io.Discard}
	var err error
	for _, c := range []struct {
		name string
		run  func() error
		want string
	}{
		{"jobs", func() error { return runJobs(g, jobsOptions{JSON: true}) }, `"dlq": 3000`},
		{"dlq list", func() error { return runDLQJobs(g, dlqListOptions{JSON: true}) }, `"items": 3000`},
	} {
		out.Reset()
		if a := allocated(func() { err = c.run() }); a > 2<<20 {
			t.Errorf("%s allocated %d KB for a job of %d DLQ items, want < 2 MB", c.name, a>>10, n)
		}
		if err != nil || !strings.Contains(out.String(), c.want) {
			t.Errorf("%s: %v\n%s", c.name, err, out.String())
		}
	}
	var rows []dlqJob
	if err := json.Unmarshal(out.Bytes(), &rows); err != nil || len(rows) != 1 || !rows[0].LastFailure.Equal(time.Date(2026, 12, 7, 3, 49, 59, 0, time.UTC)) {
		t.Errorf("dlq list: %v, want the last failure of item_2999\n%s", err, out.String())
	}
	if err := j.AppendItemRecords(state.ItemRecord{Index: 0, ID: "item_0", State: state.ItemSucceeded}); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	if err := runJobs(g, jobsOptions{JSON: true}); err != nil || !strings.Contains(out.String(), `"succeeded": 1`) || !strings.Contains(out.String(), `"dlq": 2999`) {
		t.Errorf("jobs after a logged success: %v, want it settled\n%s", err, out.String())
	}
}

// `runner dlq list JOB` (text and --json), `dlq export` (json and
// jsonl) and `dlq stats JOB` read a job's items one by one: the memory
// they hold does not grow with the items (3,000 items hold 10 MB of
// stderr): ten times the items hold less than 3 MB more (the spool's
// memory, and a short run's peak sampled less often).
func TestDLQCommandsMemoryDoesNotGrowWithItems(t *testing.T) {
	commands := []struct {
		name  string
		run   func(g *globalOptions) error
		lines func(n int) int // at least this many lines out
	}{
		{"dlq list", func(g *globalOptions) error { return runDLQList(g, dlqListOptions{}, "big") }, func(n int) int { return n }},
		{"dlq list --json", func(g *globalOptions) error { return runDLQList(g, dlqListOptions{JSON: true}, "big") }, func(n int) int { return n }},
		{"dlq export", func(g *globalOptions) error { return runDLQExport(g, dlqExportOptions{Format: "json"}, "big") }, func(n int) int { return n }},
		{"dlq export --format jsonl", func(g *globalOptions) error { return runDLQExport(g, dlqExportOptions{Format: "jsonl"}, "big") }, func(n int) int { return n }},
		{"dlq stats", func(g *globalOptions) error { return runDLQStats(g, []string{"big"}, true) }, func(int) int { return 5 }},
	}
	peaks := make([][]uint64, len(commands))
	for _, n := range []int{300, 3000} {
		dir := t.TempDir()
		bigDLQJob(t, dir, n)
		for i, c := range commands {
			// The lower of two runs: on busy cores a collection counts
			// live what the command allocates while it marks (see
			// PeakLiveHeap), which only ever adds; what the command holds
			// shows in both.
			peak := uint64(math.MaxUint64)
			for range 2 {
				var out lineCounter
				g := &globalOptions{StateDir: dir, stdout: &out, stderr: io.Discard}
				var err error
				peak = min(peak, testkit.PeakLiveHeap(func() { err = c.run(g) }))
				if err != nil || out.lines < c.lines(n) {
					t.Fatalf("%s of %d items: %v, %d lines", c.name, n, err, out.lines)
				}
			}
			t.Logf("%s of %d items: peak live heap %d KB", c.name, n, peak>>10)
			peaks[i] = append(peaks[i], peak)
		}
	}
	for i, p := range peaks {
		if p[1] > p[0]+3<<20 {
			t.Errorf("%s: ten times the items held %d KB more (%d KB, %d KB)", commands[i].name, (p[1]-p[0])>>10, p[0]>>10, p[1]>>10)
		}
	}
}

// lineCounter counts the lines written to it and keeps none.
type lineCounter struct{ lines int }

func (w *lineCounter) Write(p []byte) (int, error) {
	w.lines += bytes.Count(p, []byte("\n"))
	return len(p), nil
}
