package dlq

import (
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/runnerdev/runner/internal/testkit"
)

// countOpens makes the Writer count its opens of the file.
func countOpens(t *testing.T) *atomic.Int32 {
	var n atomic.Int32
	openQueue = func(path string, opts Options) (*DB, error) {
		n.Add(1)
		return Open(path, opts)
	}
	t.Cleanup(func() { openQueue = Open })
	return &n
}

func failure(i int) Entry {
	return Entry{JobID: "j", ItemID: fmt.Sprintf("item_%d", i), ItemIndex: i, Failure: Failure{Kind: "exit", Message: "boom"}}
}

// Adds that follow one another share one open of the file, not one each;
// each is durable (in the file) when it returns.
func TestWriterKeepsTheFileOpen(t *testing.T) {
	opens := countOpens(t)
	idle, hold := writerIdle, writerHold
	writerIdle, writerHold = time.Minute, time.Minute // no close but Close
	t.Cleanup(func() { writerIdle, writerHold = idle, hold })
	path := filepath.Join(t.TempDir(), "dlq.db")
	w := NewWriter(path, Options{})
	const n = 20
	for i := range n {
		if err := w.Add(failure(i)); err != nil {
			t.Fatal(err)
		}
		got := 0
		if err := w.View(func(d *DB) (err error) { got, err = d.Count(); return err }); err != nil || got != i+1 {
			t.Fatalf("after add %d: %d items, %v", i, got, err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if got := opens.Load(); got != 1 {
		t.Errorf("%d adds opened the file %d times, want once", n, got)
	}
}

// While Adds keep coming, another process (here: another open of the
// file, which flock sets against the Writer's alike) gets the file within
// a hold; once they stop, the file is closed.
func TestWriterLetsOthersIn(t *testing.T) {
	path := filepath.Join(t.TempDir(), "dlq.db")
	w := NewWriter(path, Options{Timeout: time.Minute})
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var added atomic.Int64
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := g; ; i += 4 {
				select {
				case <-stop:
					return
				default:
				}
				if err := w.Add(failure(i)); err != nil {
					t.Error(err)
					return
				}
				added.Add(1)
			}
		}()
	}
	for added.Load() < 8 {
		time.Sleep(time.Millisecond)
	}
	for range 3 {
		d, err := Open(path, Options{ReadOnly: true, Timeout: 30 * time.Second})
		if err != nil {
			t.Fatalf("a reader while adds keep coming: %v", err)
		}
		d.Close()
	}
	close(stop)
	wg.Wait()
	// Idle: closed by the Writer's timer, with no Close.
	d, err := Open(path, Options{Timeout: 30 * time.Second})
	if err != nil {
		t.Fatalf("a writer after the adds: %v", err)
	}
	if n, err := d.Count(); err != nil || int64(n) != added.Load() {
		t.Errorf("%d items, %v; want %d", n, err, added.Load())
	}
	d.Close()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// heldCommits holds each commit of a Writer until the test lets it go:
// the commit sends the number of its entries on started, then waits for
// release. When the test ends, the commits still held go on.
type heldCommits struct {
	started chan int
	release chan struct{}
}

func holdCommits(t *testing.T) heldCommits {
	h := heldCommits{started: make(chan int, 100), release: make(chan struct{})}
	addBatch = func(d *DB, entries ...Entry) error {
		h.started <- len(entries)
		<-h.release
		return d.Add(entries...)
	}
	t.Cleanup(func() {
		close(h.release)
		addBatch = (*DB).Add
	})
	return h
}

// receive returns the next value of c, failing the test when none comes.
func receive[T any](t *testing.T, c <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-c:
		return v
	case <-time.After(testkit.Scale(10 * time.Second)):
		t.Fatalf("%s: not within %v", what, testkit.Scale(10*time.Second))
		panic("unreachable")
	}
}

// waiting waits until n Adds wait for the next commit.
func waiting(t *testing.T, w *Writer, n int) {
	t.Helper()
	testkit.Eventually(t, func() bool {
		w.mu.Lock()
		defer w.mu.Unlock()
		return len(w.pending) == n
	}, fmt.Sprintf("%d adds waiting", n))
}

// Adds that arrive while a commit runs are committed together in the
// next one: 8 failures at once, 2 commits (one file generation each).
func TestWriterCommitsWaitingAddsTogether(t *testing.T) {
	w := NewWriter(filepath.Join(t.TempDir(), "dlq.db"), Options{})
	t.Cleanup(func() { w.Close() })
	h := holdCommits(t)
	const n = 8
	errs := make(chan error, n)
	go func() { errs <- w.Add(failure(0)) }()
	if got := receive(t, h.started, "the first commit"); got != 1 {
		t.Fatalf("the first commit has %d entries, want 1", got)
	}
	for i := 1; i < n; i++ {
		go func() { errs <- w.Add(failure(i)) }()
	}
	waiting(t, w, n-1)
	h.release <- struct{}{}
	if got := receive(t, h.started, "the second commit"); got != n-1 {
		t.Fatalf("the second commit has %d entries, want the %d adds that waited", got, n-1)
	}
	h.release <- struct{}{}
	for range n {
		if err := receive(t, errs, "an add's end"); err != nil {
			t.Fatal(err)
		}
	}
	var s Summary
	if err := w.View(func(d *DB) (err error) { s, err = d.Summary(); return err }); err != nil {
		t.Fatal(err)
	}
	if s.Items != n || s.Generation != 2 {
		t.Errorf("%d items in %d commits; want %d in 2", s.Items, s.Generation, n)
	}
}

// An Add returns once its own entries are durable, not after the
// commits of the Adds that came while its own ran: its item's slot is
// not held for other items' failures.
func TestWriterAddReturnsOnceItsEntriesAreDurable(t *testing.T) {
	w := NewWriter(filepath.Join(t.TempDir(), "dlq.db"), Options{})
	t.Cleanup(func() { w.Close() })
	h := holdCommits(t)
	first, second := make(chan error, 1), make(chan error, 1)
	go func() { first <- w.Add(failure(0)) }()
	receive(t, h.started, "the first commit")
	go func() { second <- w.Add(failure(1)) }()
	waiting(t, w, 1)
	h.release <- struct{}{}
	receive(t, h.started, "the second commit")
	if err := receive(t, first, "the first add, while the second commit runs"); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-second:
		t.Fatalf("the second add returned (%v) before its commit ended", err)
	default:
	}
	h.release <- struct{}{}
	if err := receive(t, second, "the second add"); err != nil {
		t.Fatal(err)
	}
}
