package report

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/runnerdev/runner/dlq"
	"github.com/runnerdev/runner/internal/eventlog"
	"github.com/runnerdev/runner/internal/state"
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
		if err := WriteHTML(&page, Job{Meta: m, Events: events}); err != nil {
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
	if tl.lanes != 1 {
		t.Fatalf("lanes = %d, want 1 (one slot)", tl.lanes)
	}
	v := newView(Job{}, tl)
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
	if err := WriteHTML(&page, Job{Meta: state.Meta{ID: "j"}}); !errors.Is(err, errNoEvents) || page.Len() > 0 {
		t.Errorf("WriteHTML without events: %v, %d bytes written", err, page.Len())
	}
}

// The summary counts a MapReduce job's items and a standard job's steps;
// the DLQ table has a row per item with its last failure, and says
// "Empty." without items; a standard job's page has no DLQ section.
func TestWriteHTMLCountsAndDLQ(t *testing.T) {
	events := []eventlog.Event{ev(0, "job_started", nil), ev(10, "job_completed", nil)}
	last := time.Date(2026, 11, 22, 10, 15, 0, 0, time.UTC)
	dead := []dlq.Item{{ItemID: "item-7", FailureCount: 3, LastFailure: last, Failures: []dlq.Failure{
		{Kind: "timeout", Step: "fetch", Message: "first"},
		{Kind: "exit", Step: "resize", Message: "exit status 2"},
	}}}
	for _, tc := range []struct {
		name       string
		meta       state.Meta
		dead       []dlq.Item
		want, miss []string
	}{
		{"mapreduce", state.Meta{Items: &state.ItemCounts{Total: 9, Succeeded: 5, Failed: 1, DLQ: 1, Skipped: 2, Pending: 1}}, dead, []string{
			"<tr><th>items</th><th>succeeded</th><th>in the DLQ</th><th>skipped</th><th>pending</th></tr><tr><td>9</td><td>5</td><td>1</td><td>2</td><td>1</td></tr>",
			"5 succeeded &#43; 1 in the DLQ &#43; 2 skipped &#43; 1 pending = 9 items", // html/template writes + as &#43;
			"<tr><td><code>item-7</code></td><td>3</td><td>2026-11-22T10:15:00Z</td><td>exit</td><td>resize</td><td><code>exit status 2</code></td></tr>",
		}, nil},
		{"mapreduce without DLQ", state.Meta{Items: &state.ItemCounts{Total: 2, Succeeded: 2}}, nil, []string{
			"<h2>Dead-letter queue</h2>\n<p>Empty.</p>",
		}, nil},
		{"standard", state.Meta{Steps: 4, StepsDone: 3}, nil, []string{
			"<tr><th>steps</th><th>finished</th></tr><tr><td>4</td><td>3</td></tr>",
		}, []string{"Dead-letter queue", "Merges", "Branches"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var page strings.Builder
			if err := WriteHTML(&page, Job{Meta: tc.meta, Events: events, DLQ: tc.dead}); err != nil {
				t.Fatal(err)
			}
			for _, want := range tc.want {
				if !strings.Contains(page.String(), want) {
					t.Errorf("the page has no %s", want)
				}
			}
			for _, miss := range tc.miss {
				if strings.Contains(page.String(), miss) {
					t.Errorf("the page has %s", miss)
				}
			}
		})
	}
}

// The items of a job whose DLQ a retry halved add up: the summary's
// counts are each item's state now (succeeded + in the DLQ + skipped +
// pending = items), not the metadata's failures, which count an item
// once per run it failed in (194 + 11 + 6 made 211 of 200 items). The
// items that failed at least once are told apart, with what became of
// them.
func TestItemCountsAddUp(t *testing.T) {
	var events []eventlog.Event
	for i := range 11 {
		id := map[string]any{"item_id": fmt.Sprintf("i%d", i), "kind": "exit", "message": "boom"}
		events = append(events, ev(i, "item_failed", id))
	}
	for i := range 5 { // dlq retry: five succeed, the others fail again
		events = append(events, ev(100+i, "item_succeeded", map[string]any{"item_id": fmt.Sprintf("i%d", i)}))
	}
	for i := 5; i < 11; i++ {
		events = append(events, ev(100+i, "item_failed", map[string]any{"item_id": fmt.Sprintf("i%d", i)}))
	}
	v := itemCounts(state.ItemCounts{Total: 200, Succeeded: 194, Failed: 17, DLQ: 6}, events)
	sum := 0
	for _, c := range v.Cells[1:] {
		if c[0] == "failed" {
			t.Errorf("the counts show failures, which are not items: %v", v.Cells)
		}
		n, _ := strconv.Atoi(c[1])
		sum += n
	}
	if total, _ := strconv.Atoi(v.Cells[0][1]); v.Cells[0][0] != "items" || sum != total {
		t.Errorf("cells %v add up to %d, not to the items", v.Cells, sum)
	}
	if want := "194 succeeded + 6 in the DLQ + 0 skipped + 0 pending = 200 items"; v.Sum != want {
		t.Errorf("sum %q, want %q", v.Sum, want)
	}
	if want := "11 item(s) failed at least once: 5 succeeded when run again, 6 failed in their last run."; v.FailedOnce != want {
		t.Errorf("failed once %q, want %q", v.FailedOnce, want)
	}
}

// A standard workflow's page labels a lane per step and has a table of
// its steps: attempts (of every run), duration, exit code and status.
func TestStandardPageSteps(t *testing.T) {
	step := func(name string, more map[string]any) map[string]any {
		f := map[string]any{"step": name}
		for k, v := range more {
			f[k] = v
		}
		return f
	}
	events := []eventlog.Event{
		ev(0, "job_started", nil),
		ev(0, "step_started", step("build", nil)),
		ev(0, "attempt_started", step("build", map[string]any{"attempt": 1})),
		ev(10, "attempt_failed", step("build", map[string]any{"kind": "exit", "message": "exit status 75"})),
		ev(20, "attempt_started", step("build", map[string]any{"attempt": 2})),
		ev(40, "attempt_succeeded", step("build", nil)),
		ev(40, "step_completed", step("build", map[string]any{"exit_code": 0})),
		ev(40, "step_started", step("a-very-long-step-name", nil)),
		ev(40, "attempt_started", step("a-very-long-step-name", map[string]any{"attempt": 1})),
		ev(45, "attempt_failed", step("a-very-long-step-name", map[string]any{"kind": "exit", "message": "exit status 2"})),
		ev(45, "step_failed", step("a-very-long-step-name", map[string]any{"exit_code": 2, "error": "exit status 2"})),
		ev(46, "step_skipped", step("deploy", map[string]any{"reason": "when: false"})),
		ev(46, "job_failed", nil),
	}
	var page strings.Builder
	if err := WriteHTML(&page, Job{Meta: state.Meta{ID: "j", Status: state.Failed, Steps: 3, StepsDone: 1}, Events: events}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`<text class="lane-label" x="0" y="0" dy="14">build<title>build</title></text>`,
		`<text class="lane-label" x="0" y="20" dy="14">a-very-long…<title>a-very-long-step-name</title></text>`,
		`<tr><td></td><td><code>build</code></td><td class="step-succeeded">succeeded</td><td>2</td><td>40ms</td><td>0</td></tr>`,
		`<tr><td></td><td><code>a-very-long-step-name</code></td><td class="step-failed">failed</td><td>1</td><td>5ms</td><td>2</td></tr>`,
		`<tr><td></td><td><code>deploy</code></td><td class="step-skipped">skipped</td><td>0</td><td></td><td></td></tr>`,
	} {
		if !strings.Contains(page.String(), want) {
			t.Errorf("the page has no %s", want)
		}
	}
	if strings.Contains(page.String(), "Dead-letter queue") {
		t.Error("a standard job's page has a DLQ section")
	}
}

// An agent job's page shows its merges, adding up to its items with a
// branch; a conflict in red with its paths, its item's attempt (which
// succeeded) drawn failed; the job branch, its items'
// kept branches and the git merge command that merges the job branch.
func TestAgentPageMerges(t *testing.T) {
	merge := func(id string, commits int, merged bool, conflicts ...string) map[string]any {
		f := map[string]any{"item_id": id, "branch": "runner-items/j/" + id, "commits": commits, "merged": merged}
		if conflicts != nil {
			f["conflicts"], f["kind"] = conflicts, "merge_conflict"
		}
		return f
	}
	events := []eventlog.Event{
		ev(0, "job_started", nil),
		ev(10, "item_succeeded", merge("a", 2, true)),
		ev(20, "item_succeeded", merge("b", 0, false)),
		ev(21, "attempt_started", map[string]any{"item_id": "c", "step": "edit", "attempt": 1}),
		ev(29, "attempt_succeeded", map[string]any{"item_id": "c", "step": "edit"}),
		ev(30, "item_failed", merge("c", 1, false, "src/x.go", "README.md")),
		ev(40, "job_completed", nil),
	}
	m := state.Meta{ID: "j", Status: state.Completed, Items: &state.ItemCounts{Total: 3, Succeeded: 2, Failed: 1, DLQ: 1}}
	b := &Branches{Job: "runner/j", Target: "main", Items: []string{"runner-items/j/c"}}
	var page strings.Builder
	if err := WriteHTML(&page, Job{Meta: m, Events: events, Branches: b}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`<p id="merge-summary">1 merged (2 commits) &#43; 1 in conflict &#43; 1 without commits = 3 item(s) with a branch</p>`,
		`<tr class="conflict"><td><code>c</code></td><td><code>runner-items/j/c</code></td><td><code>src/x.go</code>, <code>README.md</code></td></tr>`,
		`<tr><td><code>a</code></td><td><code>runner-items/j/a</code></td><td>2</td></tr>`,
		`<tr><th>job branch</th><td><code>runner/j</code>: not merged into main</td></tr>`,
		`<code class="command">git merge --no-ff runner/j</code> in your checkout on main, or <code class="command">runner resume --merge j</code>`,
		`<tr><th>items' branches</th><td><code>runner-items/j/c</code></td></tr>`,
		`<rect class="fail" x="`,
		`<title>item c, edit, attempt 1: succeeded in 8ms; its merge into the job branch conflicted in src/x.go, README.md</title>`,
	} {
		if !strings.Contains(page.String(), want) {
			t.Errorf("the page has no %s", want)
		}
	}
	b.Merged = true
	page.Reset()
	if err := WriteHTML(&page, Job{Meta: m, Events: events, Branches: b}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(page.String(), "<code>runner/j</code>: merged into main") || strings.Contains(page.String(), "git merge") {
		t.Error("a merged job branch is not said merged, or still has a merge command")
	}
}

// The time between two runs of a job (interrupted, resumed an hour
// later) is a break of breakWidth, not drawn to scale: the two runs of
// equal length get equal widths, and the attempt the interruption ended
// ends there; the step's row counts the time of both runs.
func TestRunsApartDrawnWithABreak(t *testing.T) {
	s := func(ms int, typ string) eventlog.Event {
		return ev(ms, typ, map[string]any{"step": "work", "attempt": 1})
	}
	hour := int(time.Hour / time.Millisecond)
	events := []eventlog.Event{
		ev(0, "job_started", nil), s(0, "step_started"), s(0, "attempt_started"), ev(100, "job_interrupted", nil),
		ev(hour, "job_resumed", nil), s(hour, "step_started"), s(hour, "attempt_started"), s(hour+100, "attempt_succeeded"),
		s(hour+100, "step_completed"), ev(hour+100, "job_completed", nil),
	}
	tl := buildTimeline(events)
	if len(tl.breaks) != 1 || tl.breaks[0].start != at(100) || tl.breaks[0].end != at(hour) {
		t.Fatalf("breaks %+v, want one from 100ms to 1h", tl.breaks)
	}
	v := newView(Job{}, tl)
	if len(v.Bars) != 2 || len(v.Breaks) != 1 {
		t.Fatalf("%d bars, %d breaks", len(v.Bars), len(v.Breaks))
	}
	first, second := v.Bars[0], v.Bars[1]
	if first.Class != "open" || second.Class != "ok" {
		t.Errorf("bars %+v", v.Bars)
	}
	if d := first.W - second.W; d < -3 || d > 3 || first.W < 400 {
		t.Errorf("runs of equal length drawn %d and %d pixels wide", first.W, second.W)
	}
	if br := v.Breaks[0]; br.X < first.X+first.W || br.X+br.W > second.X {
		t.Errorf("break at x=%d..%d, not between the runs (%d..%d, %d..)", br.X, br.X+br.W, first.X, first.X+first.W, second.X)
	}
	if !strings.Contains(v.Duration, "ran 200ms in 2 runs") {
		t.Errorf("duration %q", v.Duration)
	}
	// The step's row counts both runs, the time between them not.
	if steps := buildSteps(events); len(steps) != 1 || steps[0].Attempts != 2 || steps[0].Duration != "200ms" || steps[0].Status != "succeeded" {
		t.Errorf("steps %+v, want work succeeded in 2 attempts and 200ms", steps)
	}
}

// The page lists the first items of a large DLQ and says how many more
// it holds.
func TestPageListsFirstDLQItems(t *testing.T) {
	events := []eventlog.Event{ev(0, "job_started", nil), ev(10, "job_completed", nil)}
	dead := []dlq.Item{{ItemID: "item-1", FailureCount: 1, Failures: []dlq.Failure{{Kind: "exit", Step: "work", Message: "boom"}}}}
	var page strings.Builder
	m := state.Meta{ID: "j", Items: &state.ItemCounts{Total: 5, DLQ: 5}}
	if err := WriteHTML(&page, Job{Meta: m, Events: events, DLQ: dead, DLQTotal: 5}); err != nil {
		t.Fatal(err)
	}
	if want := "1 listed, 4 more in the queue (<code>runner dlq list j</code> lists them all)."; !strings.Contains(page.String(), want) {
		t.Errorf("the page has no %q", want)
	}
}
