package report

import (
	"encoding/json"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/runnerdev/runner/internal/eventlog"
)

// at is ms milliseconds into a test job.
func at(ms int) time.Time { return time.Unix(0, 0).Add(time.Duration(ms) * time.Millisecond) }

func ev(ms int, typ string, fields map[string]any) eventlog.Event {
	id, _ := fields["item_id"].(string)
	return eventlog.Event{Time: at(ms), Type: eventlog.Type(typ), ItemID: id, Fields: fields}
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
	if tl.lanes != 2 { // two slots (x and y, then z on x's lane), no steps
		t.Errorf("lanes = %d, want 2", tl.lanes)
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

// Attempts of setup, steps and reduce (no item) lie on lane 0; an attempt
// the log never finishes, and a breaker that never closes, reach to the
// log's last event. Each bar's title says whose attempt it was and how it
// went; attempt numbers are read back from the log as JSON numbers.
func TestTimelineStepsAndUnfinished(t *testing.T) {
	events := []eventlog.Event{
		ev(0, "job_started", nil),
		ev(0, "attempt_started", map[string]any{"step": "setup-1", "attempt": json.Number("1")}),
		ev(25, "attempt_succeeded", map[string]any{"step": "setup-1"}),
		ev(30, "attempt_started", map[string]any{"item_id": "x", "step": "work", "attempt": json.Number("2")}),
		ev(40, "attempt_failed", map[string]any{"item_id": "x", "step": "work", "kind": "exit", "message": "exit status 1"}),
		ev(50, "circuit_opened", map[string]any{"scope": "workflow", "step": "work"}),
		ev(60, "attempt_started", map[string]any{"item_id": "y", "step": "work", "attempt": json.Number("1")}),
		ev(90, "job_interrupted", nil),
	}
	tl := buildTimeline(events)
	want := []bar{
		{id: 0, lane: 0, start: at(0), end: at(25), class: "ok", title: "setup-1, attempt 1: succeeded in 25ms"},
		{id: 1, lane: 1, start: at(30), end: at(40), class: "fail", title: "item x, work, attempt 2: exit status 1"},
		{id: 2, lane: 1, start: at(60), end: at(90), class: "open", title: "still running or interrupted: item y, work"},
	}
	if !slices.Equal(tl.bars, want) {
		t.Errorf("bars\n got %+v\nwant %+v", tl.bars, want)
	}
	if tl.lanes != 2 {
		t.Errorf("lanes = %d, want 2", tl.lanes)
	}
	if len(tl.pauses) != 1 || tl.pauses[0].start != at(50) || tl.pauses[0].end != at(90) {
		t.Errorf("pauses %+v, want one from 50ms to the end at 90ms", tl.pauses)
	}
}

// A job of more attempts than maxBars draws its step attempts and the
// first agent attempts up to maxBars, and counts the rest as dropped.
func TestTimelineDropsBarsBeyondMax(t *testing.T) {
	events := []eventlog.Event{
		ev(0, "attempt_started", map[string]any{"step": "setup"}),
		ev(1, "attempt_succeeded", map[string]any{"step": "setup"}),
	}
	for i := range maxBars + 10 {
		item := map[string]any{"item_id": strconv.Itoa(i), "step": "work"}
		events = append(events, ev(2+i, "attempt_started", item), ev(3+i, "attempt_succeeded", item))
	}
	tl := buildTimeline(events)
	if len(tl.bars) != maxBars || tl.dropped != 11 {
		t.Errorf("%d bars, %d dropped; want %d and 11", len(tl.bars), tl.dropped, maxBars)
	}
	if tl.bars[0].lane != 0 || tl.bars[1].start != at(2) || tl.bars[len(tl.bars)-1].start != at(maxBars) {
		t.Errorf("kept the bars starting at %v, %v ... %v; want the setup's and the first agent attempts", tl.bars[0].start, tl.bars[1].start, tl.bars[len(tl.bars)-1].start)
	}
}

// The steps of a parallel: block, whose attempts overlap, each get a
// lane of their own, their bars side by side in time.
func TestTimelineParallelSteps(t *testing.T) {
	in := func(step string, more ...any) map[string]any {
		m := map[string]any{"step": step, "phase": "commands", "parallel": "parallel steps 1-2", "attempt": json.Number("1")}
		for i := 0; i+1 < len(more); i += 2 {
			m[more[i].(string)] = more[i+1]
		}
		return m
	}
	events := []eventlog.Event{
		ev(0, "job_started", nil),
		ev(0, "attempt_started", in("build")),
		ev(1, "attempt_started", in("vet")),
		ev(20, "attempt_failed", in("vet", "kind", "exit", "message", "exit status 1")),
		ev(30, "attempt_succeeded", in("build")),
		ev(40, "job_failed", nil),
	}
	want := []bar{
		{id: 0, lane: 0, start: at(1), end: at(20), class: "fail", title: "vet, attempt 1: exit status 1"},
		{id: 1, lane: 1, start: at(0), end: at(30), class: "ok", title: "build, attempt 1: succeeded in 30ms"},
	}
	if got := buildTimeline(events).bars; !slices.Equal(got, want) {
		t.Errorf("bars\n got %+v\nwant %+v", got, want)
	}
}
