package report

import (
	"path/filepath"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/runnerdev/runner/internal/eventlog"
)

// writeMapLog writes the event log of a map job of items items, eight at
// a time, as runner writes it: each item's attempt, every tenth failing
// once and retried, and its end.
func writeMapLog(t *testing.T, items int) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "events.jsonl")
	now := time.Unix(0, 0)
	log, err := eventlog.Open(path, "big", eventlog.Options{Now: func() time.Time { now = now.Add(time.Millisecond); return now }})
	if err != nil {
		t.Fatal(err)
	}
	emit := func(e eventlog.Event) {
		if _, err := log.Emit(e); err != nil {
			t.Fatal(err)
		}
	}
	emit(eventlog.JobStarted(1, "big", "big.yml", "mapreduce", 1))
	for first := 0; first < items; first += 8 {
		ids := make([]string, 0, 8)
		for i := first; i < min(first+8, items); i++ {
			ids = append(ids, strconv.Itoa(i))
		}
		for _, id := range ids {
			emit(eventlog.AttemptStarted("work", 1).WithItem(id))
		}
		for i, id := range ids {
			if (first+i)%10 == 0 {
				emit(eventlog.AttemptFailed(eventlog.Failure{Step: "work", Attempt: 1, Kind: "exit", ExitCode: 1, Message: "exit status 1"}).WithItem(id))
				emit(eventlog.RetryDecision("work", eventlog.Decision{Attempt: 1, Action: "retry"}).WithItem(id))
				emit(eventlog.AttemptStarted("work", 2).WithItem(id))
			}
			emit(eventlog.AttemptSucceeded("work", 1, time.Millisecond).WithItem(id))
			emit(eventlog.ItemSucceeded(id, 1, time.Millisecond))
		}
	}
	emit(eventlog.JobFinished("completed", 0, time.Second, nil, nil))
	if err := log.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// peakHeap is the most heap that reading the job's log into its page
// held live, sampled after a collection every 1,000 events.
func peakHeap(t *testing.T, path string) (peak uint64, events int) {
	t.Helper()
	r := newReading()
	var m runtime.MemStats
	err := Job{EventLog: path}.eachEvent(func(e eventlog.Event) {
		r.add(e)
		if events++; events%1000 == 0 {
			runtime.GC()
			runtime.ReadMemStats(&m)
			peak = max(peak, m.HeapAlloc)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if tl := r.timeline.timeline(); tl.dropped == 0 {
		t.Fatalf("%d events: no attempt merged into cells", events)
	}
	return peak, events
}

// checkDoesNotGrow fails the test when reading the log of 60,000 items
// holds more than 1.5 times the live heap that the log of 6,000 does, as
// peak measures them (with a count of what it read: events, test cases).
func checkDoesNotGrow(t *testing.T, what string, peak func(*testing.T, string) (uint64, int)) {
	t.Helper()
	if testing.Short() {
		t.Skip("writes logs of 20,000 and 200,000 events")
	}
	small, nSmall := peak(t, writeMapLog(t, 6_000))
	large, nLarge := peak(t, writeMapLog(t, 60_000))
	t.Logf("%d %s: peak live heap %d KB; %d %s: %d KB", nSmall, what, small/1024, nLarge, what, large/1024)
	if float64(large) > 1.5*float64(small) {
		t.Errorf("ten times the %s took %.1f times the memory (%d KB, %d KB)", what, float64(large)/float64(small), small/1024, large/1024)
	}
}

// The memory that makes a job's page does not grow with its items: a log
// ten times longer needs about as much (the first maxBars attempts and
// the cells are the same size), where holding its events or an attempt
// per item grew tenfold.
func TestReportMemoryDoesNotGrowWithItems(t *testing.T) {
	checkDoesNotGrow(t, "events", peakHeap)
}

// junitPeakHeap is the most heap that reading the job's log into its
// JUnit report held live, sampled after a collection every 1,000 events
// and while its cases are written.
func junitPeakHeap(t *testing.T, path string) (peak uint64, cases int) {
	t.Helper()
	b := newJUnitBuilder("big", true)
	defer b.ended.Close()
	var m runtime.MemStats
	sample := func() {
		runtime.GC()
		runtime.ReadMemStats(&m)
		peak = max(peak, m.HeapAlloc)
	}
	events := 0
	err := eachEvent(path, nil, func(e eventlog.Event) {
		b.add(e)
		if events++; events%1000 == 0 {
			sample()
		}
	})
	if err == nil {
		err = b.eachCase(func(junitCase) error {
			if cases++; cases%1000 == 0 {
				sample()
			}
			return nil
		})
	}
	if err != nil {
		t.Fatal(err)
	}
	return peak, cases
}

// The memory that makes a map job's JUnit report does not grow with its
// items: an item's case leaves memory once it ended, where a case per
// item held in memory grew tenfold.
func TestJUnitMemoryDoesNotGrowWithItems(t *testing.T) {
	checkDoesNotGrow(t, "test cases", junitPeakHeap)
}
