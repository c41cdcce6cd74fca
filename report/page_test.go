package report

import (
	"strings"
	"testing"

	"github.com/runnerdev/runner/eventlog"
	"github.com/runnerdev/runner/state"
)

// A job that completed with items in the DLQ is not titled a plain
// success: the heading says how many items are in the DLQ, out of the
// success colour.
func TestReportTitleWithDLQ(t *testing.T) {
	events := []eventlog.Event{ev(0, "job_started", nil), ev(10, "job_completed", nil)}
	for _, tc := range []struct {
		items       *state.ItemCounts
		title, miss string
	}{
		{&state.ItemCounts{Total: 3, Succeeded: 1, Failed: 2, DLQ: 2}, `<span class="status-dlq">completed with 2 item(s) in the DLQ</span>`, "status-completed"},
		{&state.ItemCounts{Total: 3, Succeeded: 3}, `<span class="status-completed">completed</span>`, "status-dlq"},
	} {
		var page strings.Builder
		m := state.Meta{ID: "j", Workflow: "w", Status: state.Completed, Items: tc.items}
		if err := WriteHTML(&page, m, events, nil); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(page.String(), tc.title) {
			t.Errorf("DLQ %d: the page has no %s", tc.items.DLQ, tc.title)
		}
		if strings.Contains(page.String(), `class="`+tc.miss+`"`) {
			t.Errorf("DLQ %d: the page uses %s", tc.items.DLQ, tc.miss)
		}
	}
}

// Consecutive attempts on one lane, the next starting the moment the
// last one ends, are drawn apart: each bar ends a visible gap before the
// next one on its lane starts.
func TestReportBarsOnALaneDoNotTouch(t *testing.T) {
	a := func(item string) map[string]any {
		return map[string]any{"item_id": item, "step": "work", "attempt": int64(1)}
	}
	var events []eventlog.Event
	for i, item := range []string{"a", "b", "c", "d"} {
		events = append(events, ev(i*100, "attempt_started", a(item)), ev((i+1)*100, "attempt_succeeded", a(item)))
	}
	events = append(events, ev(401, "job_completed", nil))
	tl := buildTimeline(events)
	if tl.lanes != 2 {
		t.Fatalf("lanes = %d, want 2 (one slot)", tl.lanes)
	}
	v := newView(state.Meta{}, tl, nil)
	if len(v.Bars) != 4 {
		t.Fatalf("%d bars, want 4", len(v.Bars))
	}
	for i := 1; i < len(v.Bars); i++ {
		prev, b := v.Bars[i-1], v.Bars[i]
		if prev.X+prev.W >= b.X {
			t.Errorf("bar %d ends at x=%d, bar %d starts at x=%d: no gap", i-1, prev.X+prev.W, i, b.X)
		}
		if prev.W < 1 {
			t.Errorf("bar %d has width %d", i-1, prev.W)
		}
	}
}
