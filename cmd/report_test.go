package cmd

import (
	"strings"
	"testing"
	"time"

	"github.com/runnerdev/runner/eventlog"
	"github.com/runnerdev/runner/state"
)

func ev(ms int, typ string, fields map[string]any) eventlog.Event {
	return eventlog.Event{Time: time.Unix(0, 0).Add(time.Duration(ms) * time.Millisecond), Type: typ, Fields: fields}
}

// Agent attempts get as many lanes as ran at once; a retry delay lies on
// the lane of the attempt it follows; breaker pauses span their opening.
func TestBuildTimeline(t *testing.T) {
	a := func(item string) map[string]any {
		return map[string]any{"item_id": item, "step": "work", "attempt": int64(1)}
	}
	a2 := func(item string) map[string]any {
		return map[string]any{"item_id": item, "step": "work", "attempt": int64(2)}
	}
	events := []eventlog.Event{
		ev(0, "job_started", nil),
		ev(0, "attempt_started", a("x")),
		ev(0, "attempt_started", a("y")),
		ev(10, "attempt_failed", map[string]any{"item_id": "x", "step": "work", "kind": "exit", "message": "boom"}),
		ev(10, "retry_decision", map[string]any{"item_id": "x", "step": "work", "action": "retry"}),
		ev(12, "attempt_started", a("z")),
		ev(20, "attempt_succeeded", a("y")),
		ev(20, "circuit_opened", map[string]any{"scope": "workflow"}),
		ev(30, "attempt_succeeded", a("z")),
		ev(40, "circuit_half_open", map[string]any{"scope": "workflow"}),
		ev(50, "attempt_started", a2("x")),
		ev(60, "attempt_failed", map[string]any{"item_id": "x", "step": "work", "kind": "timeout", "message": "slow"}),
		ev(70, "job_completed", nil),
	}
	tl := buildTimeline(events)
	if tl.lanes != 3 { // steps lane + two slots (x and y, then z on x's lane)
		t.Errorf("lanes = %d, want 3", tl.lanes)
	}
	classes := map[string]int{}
	for _, b := range tl.bars {
		classes[b.class]++
	}
	if classes["ok"] != 2 || classes["fail"] != 1 || classes["timeout"] != 1 {
		t.Errorf("bar classes %v", classes)
	}
	if len(tl.gaps) != 1 || tl.gaps[0].end.Sub(tl.gaps[0].start) != 40*time.Millisecond {
		t.Fatalf("gaps %+v", tl.gaps)
	}
	var failedLane int
	for _, b := range tl.bars {
		if b.class == "fail" {
			failedLane = b.lane
		}
	}
	if tl.gaps[0].lane != failedLane {
		t.Errorf("retry delay on lane %d, its failed attempt on lane %d", tl.gaps[0].lane, failedLane)
	}
	if len(tl.pauses) != 1 || tl.pauses[0].end.Sub(tl.pauses[0].start) != 20*time.Millisecond {
		t.Errorf("pauses %+v", tl.pauses)
	}
}

// A job that completed with items in the DLQ is not titled a plain
// success: the heading says how many items are in the DLQ, out of the
// success colour.
func TestReportTitleWithDLQ(t *testing.T) {
	tl := buildTimeline([]eventlog.Event{ev(0, "job_started", nil), ev(10, "job_completed", nil)})
	for _, tc := range []struct {
		items       *state.ItemCounts
		title, miss string
	}{
		{&state.ItemCounts{Total: 3, Succeeded: 1, Failed: 2, DLQ: 2}, `<span class="status-dlq">completed with 2 item(s) in the DLQ</span>`, "status-completed"},
		{&state.ItemCounts{Total: 3, Succeeded: 3}, `<span class="status-completed">completed</span>`, "status-dlq"},
	} {
		var page strings.Builder
		m := state.Meta{ID: "j", Workflow: "w", Status: state.Completed, Items: tc.items}
		if err := writeReport(&page, m, tl, nil); err != nil {
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
	v := newReportView(state.Meta{}, tl, nil)
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
