package dlq

import (
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"
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
