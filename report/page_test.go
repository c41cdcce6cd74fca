package report

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/runnerdev/runner/dlq"
	"github.com/runnerdev/runner/eventlog"
	"github.com/runnerdev/runner/state"
)

// A job that completed with items in the DLQ is not titled a plain
// success: the heading says how many items are in the DLQ, out of the
// success colour.
func TestPageTitleWithDLQ(t *testing.T) {
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
func TestBarsOnALaneDoNotTouch(t *testing.T) {
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

// A job without events has nothing to picture: no page, an error.
func TestWriteHTMLWithoutEvents(t *testing.T) {
	var page strings.Builder
	if err := WriteHTML(&page, state.Meta{ID: "j"}, nil, nil); !errors.Is(err, errNoEvents) || page.Len() > 0 {
		t.Errorf("WriteHTML without events: %v, %d bytes written", err, page.Len())
	}
}

// The summary counts a MapReduce job's items and a standard job's steps;
// the DLQ table has a row per item with its last failure, and says
// "Empty." without items.
func TestWriteHTMLCountsAndDLQ(t *testing.T) {
	events := []eventlog.Event{ev(0, "job_started", nil), ev(10, "job_completed", nil)}
	last := time.Date(2026, 11, 22, 10, 15, 0, 0, time.UTC)
	dead := []dlq.Item{{ItemID: "item-7", FailureCount: 3, LastFailure: last, Failures: []dlq.Failure{
		{Kind: "timeout", Step: "fetch", Message: "first"},
		{Kind: "exit", Step: "resize", Message: "exit status 2"},
	}}}
	for _, tc := range []struct {
		name string
		meta state.Meta
		dead []dlq.Item
		want []string
	}{
		{"mapreduce", state.Meta{Items: &state.ItemCounts{Total: 9, Succeeded: 5, Failed: 1, DLQ: 1, Skipped: 2, Pending: 1}}, dead, []string{
			"<tr><th>items</th><th>succeeded</th><th>failed</th><th>in the DLQ</th><th>skipped</th><th>pending</th></tr><tr><td>9</td><td>5</td><td>1</td><td>1</td><td>2</td><td>1</td></tr>",
			"<tr><td><code>item-7</code></td><td>3</td><td>2026-11-22T10:15:00Z</td><td>exit</td><td>resize</td><td><code>exit status 2</code></td></tr>",
		}},
		{"standard", state.Meta{Steps: 4, StepsDone: 3}, nil, []string{
			"<tr><th>steps</th><th>finished</th></tr><tr><td>4</td><td>3</td></tr>",
			"<h2>Dead-letter queue</h2>\n<p>Empty.</p>",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var page strings.Builder
			if err := WriteHTML(&page, tc.meta, events, tc.dead); err != nil {
				t.Fatal(err)
			}
			for _, want := range tc.want {
				if !strings.Contains(page.String(), want) {
					t.Errorf("the page has no %s", want)
				}
			}
		})
	}
}
