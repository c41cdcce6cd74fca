package mapreduce

import (
	"context"
	"io"
	"path/filepath"
	"runtime"
	"sync/atomic"
	"testing"

	"github.com/runnerdev/runner/internal/itemtask"
	"github.com/runnerdev/runner/internal/job"
	"github.com/runnerdev/runner/internal/state"
	"github.com/runnerdev/runner/internal/testkit"
	"github.com/runnerdev/runner/retryv2"
)

// resumedPeak runs a job of n trivial items until half of them are done
// and stops it, then resumes it to the end (reduce and all), and returns
// the peak live heap of the resume: reading the job's state, the other
// half of the items, and the end of the map. (Loading the items keeps a
// hash per item, to give each a unique id: the first run is not
// measured.)
func resumedPeak(t *testing.T, n int) uint64 {
	t.Helper()
	j := startJob(t, n, 8, "reduce:\n  - shell: 'true'\n")
	ctx, cancel := context.WithCancel(t.Context())
	var done atomic.Int64
	agent := agentFunc(func(ctx context.Context, it *Item, attempt int, slot retryv2.Slot) itemtask.Outcome {
		if done.Add(1) == int64(n/2) {
			cancel()
		}
		return itemtask.Outcome{}
	})
	Run(ctx, j, Options{DLQ: newFakeDLQ(), Dispatcher: agent.backend()})
	j.Close()
	runtime.GC()
	return testkit.PeakLiveHeap(func() {
		store := state.Store{Dir: filepath.Dir(filepath.Dir(j.Layout().Dir))}
		resumed, err := job.Resume("t", job.Options{Store: store, Stdout: io.Discard, Stderr: io.Discard})
		if err != nil {
			t.Fatal(err)
		}
		defer resumed.Close()
		sum, err := Run(t.Context(), resumed, Options{DLQ: newFakeDLQ(), Dispatcher: agent.backend()})
		if err != nil || sum.Items.Succeeded != n {
			t.Fatalf("%d items: resumed run = %+v, %v", n, sum.Items, err)
		}
	})
}

// The memory a MapReduce job's resume and run to its end need does not
// grow with its items: a job twenty times larger, stopped half way and
// resumed to its end, peaks at about the same live heap (a byte or two
// per item). Holding a Go value per item (the item log's records read on
// resume, the finished items' set, a map of the results at the end of
// the map) grew it by megabytes.
func TestMapMemoryDoesNotGrowWithItems(t *testing.T) {
	if testing.Short() || raceOn {
		t.Skip("runs 105,000 items: not with -short or -race (which makes them slow, not the heap larger)")
	}
	small := resumedPeak(t, 5_000)
	large := resumedPeak(t, 100_000)
	t.Logf("5,000 items: peak live heap %d KB; 100,000 items: %d KB", small/1024, large/1024)
	if large > small+2<<20 {
		t.Errorf("twenty times the items took %d KB more at the peak (%d KB, %d KB), want under 2 MB", (large-small)/1024, small/1024, large/1024)
	}
}
