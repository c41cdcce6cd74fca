package report

import (
	"testing"
	"time"

	"github.com/runnerdev/runner/eventlog"
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
