package report

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/runnerdev/runner/internal/eventlog"
)

// The agent attempts after the first maxBars are merged into cells on
// their slots' lanes: a mark per run of cells of one class, in the colour
// of the worst attempt that ran there (a failure; a success whose merge
// conflicted), its title counting the attempts that started in it. They
// add up to the attempts not drawn one by one.
func TestTimelineMergesAttemptsBeyondMax(t *testing.T) {
	work := func(item string) map[string]any {
		return map[string]any{"item_id": item, "step": "work", "attempt": int64(1)}
	}
	events := []eventlog.Event{ev(0, "job_started", nil)}
	ms := 1
	for i := range maxBars + 100 {
		id := strconv.Itoa(i)
		end := "attempt_succeeded"
		if i == maxBars+10 {
			end = "attempt_failed"
		}
		events = append(events, ev(ms, "attempt_started", work(id)), ev(ms+1, end, work(id)))
		if i == maxBars+90 {
			events = append(events, ev(ms+1, "item_failed", map[string]any{"item_id": id, "kind": "merge_conflict", "conflicts": []any{"a.txt"}}))
		}
		ms += 2
	}
	events = append(events, ev(ms, "job_completed", nil))
	tl := buildTimeline(events)
	if len(tl.bars) != maxBars || tl.dropped != 100 {
		t.Fatalf("%d bars, %d merged; want %d and 100", len(tl.bars), tl.dropped, maxBars)
	}
	counts := map[string]int32{}
	runsOf := map[string]int{}
	for _, r := range tl.cells.runs() {
		runsOf[r.class]++
		for i, n := range r.sum.started {
			counts[classes[i]] += n
		}
	}
	if counts["ok"] != 98 || counts["fail"] != 2 || runsOf["fail"] != 2 {
		t.Errorf("cells count %v in runs of classes %v; want 98 ok and 2 failed, in 2 runs of failures", counts, runsOf)
	}
	v := newView(Job{}, tl)
	cellMarks := v.Bars[maxBars:]
	if len(cellMarks) != len(tl.cells.runs()) {
		t.Fatalf("%d marks for %d runs of cells", len(cellMarks), len(tl.cells.runs()))
	}
	var fails int
	for _, m := range cellMarks {
		if m.Y != v.Bars[0].Y || m.X < labelWidth || m.X+m.W > chartWidth || !strings.Contains(m.Title, "attempts started (") {
			t.Errorf("mark %+v: not on the slot's lane within the chart, titled with its attempts", m)
		}
		if m.Class == "fail" {
			fails++
		}
	}
	if fails != 2 {
		t.Errorf("%d red marks, want 2: %+v", fails, cellMarks)
	}
}

// Cells cover a job of any length in the same cells: past the last one,
// each two become one twice as long, their counts added up.
func TestCellsDoubleTheirSpan(t *testing.T) {
	var c cells
	for i := range 10_000 {
		c.add(i%3, time.Duration(i)*time.Second, time.Duration(i)*time.Second+time.Millisecond, "ok")
	}
	if len(c.slots) != 3 || len(c.slots[0]) != cellsPerSlot {
		t.Fatalf("%d slots of %d cells", len(c.slots), len(c.slots[0]))
	}
	if c.width*cellsPerSlot <= 10_000*time.Second || c.width*cellsPerSlot > 20_000*time.Second {
		t.Errorf("cells of %s for a job of 10,000s", c.width)
	}
	var n int32
	for _, r := range c.runs() {
		n += r.sum.started[0]
	}
	if n != 10_000 {
		t.Errorf("the cells count %d attempts, want 10,000", n)
	}
}
