package dlq_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/runnerdev/runner/dlq"
)

var t0 = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

// open opens a fresh or existing queue in dir and closes it at test end.
func open(t testing.TB, path string, opts dlq.Options) *dlq.DB {
	t.Helper()
	d, err := dlq.Open(path, opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

func entry(id string, index int, at time.Time, msg string) dlq.Entry {
	return dlq.Entry{
		JobID: "job1", ItemID: id, ItemIndex: index,
		Item:    json.RawMessage(fmt.Sprintf(`{"id":%q}`, id)),
		Failure: dlq.Failure{At: at, Kind: "exit", ExitCode: 1, Message: msg, Step: "build"},
	}
}

func ids(t *testing.T, d *dlq.DB) []string {
	t.Helper()
	var out []string
	if err := d.List(func(it dlq.Item) bool { out = append(out, it.ItemID); return true }); err != nil {
		t.Fatalf("List: %v", err)
	}
	return out
}

func TestRoundTrip(t *testing.T) {
	d := open(t, filepath.Join(t.TempDir(), "jobs", "j", "dlq.db"), dlq.Options{})
	if err := d.Add(entry("b", 2, t0, "exit status 3"), entry("a", 1, t0, "boom")); err != nil {
		t.Fatal(err)
	}
	it, err := d.Get("a")
	if err != nil {
		t.Fatal(err)
	}
	want := dlq.Item{
		JobID: "job1", ItemID: "a", ItemIndex: 1, Item: json.RawMessage(`{"id":"a"}`),
		FailureCount: 1, FirstFailure: t0, LastFailure: t0, ErrorSignature: "boom",
		Failures: []dlq.Failure{{Attempt: 1, At: t0, Kind: "exit", ExitCode: 1, Message: "boom", Step: "build"}},
	}
	if g, w := mustJSON(t, it), mustJSON(t, want); g != w {
		t.Errorf("Get:\n got %s\nwant %s", g, w)
	}
	if _, err := d.Get("zz"); !errors.Is(err, dlq.ErrNotFound) {
		t.Errorf("Get(missing) = %v, want ErrNotFound", err)
	}
	if n, err := d.Count(); n != 2 || err != nil {
		t.Errorf("Count = %d, %v; want 2", n, err)
	}
	if n, err := d.Remove("a", "a", "nope"); n != 1 || err != nil {
		t.Errorf("Remove = %d, %v; want 1", n, err)
	}
	if got := ids(t, d); !slices.Equal(got, []string{"b"}) {
		t.Errorf("List after Remove = %v", got)
	}
}

func TestUpsertAppendsHistory(t *testing.T) {
	d := open(t, filepath.Join(t.TempDir(), "dlq.db"), dlq.Options{Now: func() time.Time { return t0 }})
	e := entry("x", 7, time.Time{}, "exit status 22: curl: (22) error: 503 (run 1)")
	e.Failure.StderrTail = "é" + strings.Repeat("y", dlq.MaxStderrTail-1) // the cut falls inside "é"
	if err := d.Add(e); err != nil {
		t.Fatal(err)
	}
	e.Item, e.JobID = nil, ""
	e.Failure.At, e.Failure.Kind, e.Failure.Message = t0.Add(time.Hour), "timeout", "timed out after 30s"
	if err := d.Add(e); err != nil {
		t.Fatal(err)
	}
	it, err := d.Get("x")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name      string
		got, want any
	}{
		{"count", it.FailureCount, 2},
		{"history", len(it.Failures), 2},
		{"first", it.FirstFailure, t0},
		{"last", it.LastFailure, t0.Add(time.Hour)},
		{"signature", it.ErrorSignature, "timed out after Ns"},
		{"attempts", [2]int{it.Failures[0].Attempt, it.Failures[1].Attempt}, [2]int{1, 2}},
		{"kinds", it.Failures[0].Kind + "," + it.Failures[1].Kind, "exit,timeout"},
		{"stored item kept", string(it.Item), `{"id":"x"}`},
		{"job kept", it.JobID, "job1"},
		{"stderr tail bytes", len(it.Failures[0].StderrTail), dlq.MaxStderrTail - 1},
		{"stderr tail is the end", strings.Trim(it.Failures[0].StderrTail, "y"), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if fmt.Sprint(tt.got) != fmt.Sprint(tt.want) {
				t.Errorf("got %v, want %v", tt.got, tt.want)
			}
		})
	}
}

func TestHistoryCap(t *testing.T) {
	d := open(t, filepath.Join(t.TempDir(), "dlq.db"), dlq.Options{})
	var batch []dlq.Entry
	for i := range dlq.MaxHistory + 25 {
		e := entry("x", 0, t0.Add(time.Duration(i)*time.Minute), "m")
		e.Failure.Attempt = i + 1
		batch = append(batch, e)
	}
	if err := d.Add(batch...); err != nil {
		t.Fatal(err)
	}
	it, err := d.Get("x")
	if err != nil {
		t.Fatal(err)
	}
	if it.FailureCount != dlq.MaxHistory+25 || len(it.Failures) != dlq.MaxHistory {
		t.Fatalf("count %d, history %d", it.FailureCount, len(it.Failures))
	}
	if a := it.Failures[0].Attempt; a != 26 {
		t.Errorf("oldest kept attempt = %d, want 26", a)
	}
	if !it.FirstFailure.Equal(t0) || !it.LastFailure.Equal(t0.Add(124*time.Minute)) {
		t.Errorf("first %v last %v", it.FirstFailure, it.LastFailure)
	}
}

func TestListOrder(t *testing.T) {
	tests := []struct {
		name string
		add  []dlq.Entry
		want []string
	}{
		{"by index not id", []dlq.Entry{entry("a", 300, t0, ""), entry("b", 2, t0, ""), entry("c", 10, t0, "")}, []string{"b", "c", "a"}},
		{"beyond one byte", []dlq.Entry{entry("x", 256, t0, ""), entry("y", 255, t0, ""), entry("z", 1<<40, t0, "")}, []string{"y", "x", "z"}},
		{"negative first", []dlq.Entry{entry("p", 0, t0, ""), entry("n", -1, t0, "")}, []string{"n", "p"}},
		{"same index by id", []dlq.Entry{entry("q", 1, t0, ""), entry("p", 1, t0, "")}, []string{"p", "q"}},
		{"index moves", []dlq.Entry{entry("m", 1, t0, ""), entry("o", 2, t0, ""), entry("m", 3, t0, "")}, []string{"o", "m"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := open(t, filepath.Join(t.TempDir(), "dlq.db"), dlq.Options{})
			if err := d.Add(tt.add...); err != nil {
				t.Fatal(err)
			}
			if got := ids(t, d); !slices.Equal(got, tt.want) {
				t.Errorf("List = %v, want %v", got, tt.want)
			}
			if n, _ := d.Count(); n != len(tt.want) {
				t.Errorf("Count = %d, want %d", n, len(tt.want))
			}
		})
	}
}

func TestListStops(t *testing.T) {
	d := open(t, filepath.Join(t.TempDir(), "dlq.db"), dlq.Options{})
	for i := range 10 {
		if err := d.Add(entry(fmt.Sprint("i", i), i, t0, "")); err != nil {
			t.Fatal(err)
		}
	}
	n := 0
	if err := d.List(func(dlq.Item) bool { n++; return n < 3 }); err != nil || n != 3 {
		t.Errorf("List visited %d (%v), want 3", n, err)
	}
}

func TestPurge(t *testing.T) {
	tests := []struct {
		name      string
		olderThan time.Time
		removed   int
		left      []string
	}{
		{"zero time purges all", time.Time{}, 3, nil},
		{"before the oldest", t0, 0, []string{"old", "mid", "new"}},
		{"strictly before", t0.Add(time.Hour), 1, []string{"mid", "new"}},
		{"all but newest", t0.Add(90 * time.Minute), 2, []string{"new"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := open(t, filepath.Join(t.TempDir(), "dlq.db"), dlq.Options{})
			err := d.Add(entry("old", 1, t0, ""), entry("mid", 2, t0.Add(time.Hour), ""), entry("new", 3, t0.Add(2*time.Hour), ""))
			if err != nil {
				t.Fatal(err)
			}
			if got, held, err := d.Purge(tt.olderThan); len(got) != tt.removed || held != 0 || err != nil {
				t.Errorf("Purge = %v, %d, %v; want %d items", got, held, err, tt.removed)
			}
			if got := ids(t, d); !slices.Equal(got, tt.left) {
				t.Errorf("left %v, want %v", got, tt.left)
			}
		})
	}
}

// Purge leaves the items that a running dlq retry holds; those of a gone
// or expired holder go.
func TestPurgeLeavesHeldItems(t *testing.T) {
	now := t0.Add(time.Hour)
	d := open(t, filepath.Join(t.TempDir(), "dlq.db"), dlq.Options{
		Now:  func() time.Time { return now },
		Gone: func(owner string) bool { return owner == "gone" },
	})
	if err := d.Add(entry("a", 1, t0, ""), entry("b", 2, t0, ""), entry("c", 3, t0, ""), entry("d", 4, t0, "")); err != nil {
		t.Fatal(err)
	}
	for id, l := range map[string]dlq.Lease{"a": {"live", now.Add(time.Hour)}, "b": {"gone", now.Add(time.Hour)}, "c": {"live", now.Add(-time.Second)}} {
		if got, err := d.Claim(l.Owner, l.Until, id); len(got) != 1 || err != nil {
			t.Fatalf("Claim(%s) = %v, %v", id, got, err)
		}
	}
	got, held, err := d.Purge(time.Time{})
	if len(got) != 3 || held != 1 || err != nil {
		t.Errorf("Purge = %v, %d, %v; want 3 purged, 1 held", got, held, err)
	}
	if left := ids(t, d); !slices.Equal(left, []string{"a"}) {
		t.Errorf("left %v, want [a]", left)
	}
	if l, ok, err := d.Holder("a"); !ok || l.Owner != "live" || err != nil {
		t.Errorf("Holder(a) = %v, %v, %v", l, ok, err)
	}
}

func TestAddRejectsEmptyID(t *testing.T) {
	d := open(t, filepath.Join(t.TempDir(), "dlq.db"), dlq.Options{})
	if err := d.Add(entry("ok", 0, t0, ""), entry("", 1, t0, "")); err == nil {
		t.Fatal("Add with an empty id succeeded")
	}
	if n, _ := d.Count(); n != 0 {
		t.Errorf("a rejected batch wrote %d items", n)
	}
}

func TestPersistsAcrossOpens(t *testing.T) {
	path := filepath.Join(t.TempDir(), "dlq.db")
	for i := range 3 {
		d, err := dlq.Open(path, dlq.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if err := d.Add(entry("x", 0, t0.Add(time.Duration(i)*time.Second), "m")); err != nil {
			t.Fatal(err)
		}
		if err := d.Close(); err != nil {
			t.Fatal(err)
		}
	}
	d := open(t, path, dlq.Options{ReadOnly: true})
	it, err := d.Get("x")
	if err != nil || it.FailureCount != 3 {
		t.Fatalf("Get = %+v, %v", it, err)
	}
}

func mustJSON(t testing.TB, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// Concurrent Writer.Add calls all land, each durable when Add returns, in
// fewer transactions than calls.
func TestWriterBatchesConcurrentAdds(t *testing.T) {
	path := filepath.Join(t.TempDir(), "dlq.db")
	w := dlq.NewWriter(path, dlq.Options{})
	const n = 64
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- w.Add(dlq.Entry{JobID: "j", ItemID: fmt.Sprintf("item_%d", i), ItemIndex: i, Failure: dlq.Failure{Kind: "exit", Message: "boom"}})
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	d, err := dlq.Open(path, dlq.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if c, err := d.Count(); err != nil || c != n {
		t.Errorf("count = %d, %v; want %d", c, err, n)
	}
}

// BenchmarkWriterAdd is the cost of a failed item reaching the DLQ when 8
// goroutines fail at once (their adds share transactions).
func BenchmarkWriterAdd(b *testing.B) {
	w := dlq.NewWriter(filepath.Join(b.TempDir(), "dlq.db"), dlq.Options{})
	var n atomic.Int64
	b.SetParallelism(4)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			i := n.Add(1)
			if err := w.Add(dlq.Entry{JobID: "j", ItemID: fmt.Sprintf("item_%d", i), ItemIndex: int(i), Failure: dlq.Failure{Kind: "exit", Message: "boom"}}); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// mappedKB is how much of the file at path this process has resident
// through its mappings (Linux's /proc/self/smaps); ok false elsewhere.
func mappedKB(path string) (kb int, ok bool) {
	smaps, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		return 0, false
	}
	in := false
	for _, line := range strings.Split(string(smaps), "\n") {
		if f := strings.Fields(line); len(f) > 0 && strings.Contains(f[0], "-") && len(f) >= 5 {
			in = len(f) == 6 && f[5] == path
		} else if in && len(f) == 3 && f[0] == "Rss:" {
			n, _ := strconv.Atoi(f[1])
			kb += n
		}
	}
	return kb, true
}

// A queue opened read-only is listed a few hundred KB at a time, each
// from a mapping of its own that is let go of: the pages of a long
// listing do not stay resident (16 MB of items, never more than 2 MB of
// them mapped); every item is listed once, in order, and the list still
// stops when asked.
func TestListLetsGoOfWhatItRead(t *testing.T) {
	path := filepath.Join(t.TempDir(), "dlq.db")
	w := open(t, path, dlq.Options{})
	const n = 4000
	var entries []dlq.Entry
	for i := range n {
		e := entry(fmt.Sprintf("item_%d", i), i, t0, "exit status 1")
		e.Failure.StderrTail = strings.Repeat("x", dlq.MaxStderrTail)
		entries = append(entries, e)
	}
	if err := w.Add(entries...); err != nil {
		t.Fatal(err)
	}
	w.Close()
	d := open(t, path, dlq.Options{ReadOnly: true})
	next, peak := 0, 0
	err := d.List(func(it dlq.Item) bool {
		if it.ItemIndex != next {
			t.Fatalf("item %d listed after %d", it.ItemIndex, next-1)
		}
		next++
		if next%100 == 0 {
			kb, ok := mappedKB(path)
			if !ok {
				t.Skip("no /proc/self/smaps")
			}
			peak = max(peak, kb)
		}
		return true
	})
	if err != nil || next != n {
		t.Fatalf("listed %d of %d items: %v", next, n, err)
	}
	t.Logf("%d items: at most %d KB of the file resident", n, peak)
	if peak > 2<<10 {
		t.Errorf("%d KB of the file resident while listing, want at most 2 MB", peak)
	}
	stopped := 0
	if err := d.List(func(dlq.Item) bool { stopped++; return stopped < 300 }); err != nil || stopped != 300 {
		t.Errorf("a list stopped at the 300th item called fn %d times: %v", stopped, err)
	}
}
