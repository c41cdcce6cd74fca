package report

import (
	"fmt"
	"strings"

	"github.com/runnerdev/runner/internal/eventlog"
	"github.com/runnerdev/runner/internal/state"
)

// countsView is the summary of a MapReduce job's items: Cells are the
// items and the states they are in now, which add up to them (Sum says
// so); FailedOnce tells of the items that failed at least once,
// whatever became of them.
type countsView struct {
	Cells      [][2]string
	Sum        string
	FailedOnce string
}

// newCounts makes the summary of a MapReduce job's items from its
// metadata's counts (where each item is now) and its events (which items
// ever failed). The metadata's Failed is not shown: it counts failures,
// once per run that an item failed in (the map, each dlq retry), so that
// succeeded + failed + in the DLQ counted an item twice.
func newCounts(c state.ItemCounts, f failures) countsView {
	pending := max(c.Total-c.Succeeded-c.DLQ-c.Skipped, 0)
	v := countsView{Cells: [][2]string{{"items", fmt.Sprint(c.Total)}, {"succeeded", fmt.Sprint(c.Succeeded)},
		{"in the DLQ", fmt.Sprint(c.DLQ)}, {"skipped", fmt.Sprint(c.Skipped)}, {"pending", fmt.Sprint(pending)}}}
	v.Sum = fmt.Sprintf("%d succeeded + %d in the DLQ + %d skipped + %d pending = %d items", c.Succeeded, c.DLQ, c.Skipped, pending, c.Succeeded+c.DLQ+c.Skipped+pending)
	v.FailedOnce = f.text()
	return v
}

// failures reads which items failed at least once and how each of them
// last ended: of the items, only those that failed are held.
type failures map[string]eventlog.Type

// add takes one event of the job, in order.
func (f failures) add(e eventlog.Event) {
	switch e.Type {
	case eventlog.TypeItemFailed:
		f[e.ItemID] = e.Type
	case eventlog.TypeItemSucceeded, eventlog.TypeItemSkipped:
		if _, failed := f[e.ItemID]; failed {
			f[e.ItemID] = e.Type
		}
	}
}

// text says how many items failed at least once, and what became of
// them: succeeded when run again (dlq retry), skipped, or failed for now;
// "" when none did.
func (f failures) text() string {
	if len(f) == 0 {
		return ""
	}
	var later, skipped int
	for _, last := range f {
		switch last {
		case eventlog.TypeItemSucceeded:
			later++
		case eventlog.TypeItemSkipped:
			skipped++
		}
	}
	parts := said(count{later, "succeeded when run again"}, count{len(f) - later - skipped, "failed in their last run"}, count{skipped, "were skipped"})
	return fmt.Sprintf("%d item(s) failed at least once: %s.", len(f), strings.Join(parts, ", "))
}

// mergeRow is what became of the branch of an item run in its own git
// worktree, as the event of its last end tells.
type mergeRow struct {
	Item, Branch string
	Commits      int64
	Merged       bool
	Conflicts    []string
	Failed       bool // the item failed before its merge
}

// mergesView is the merges of a job whose items ran in git worktrees:
// Conflicts first, then Merged; Summary counts every item with a
// branch, each in one of its parts.
type mergesView struct {
	Summary   string
	Conflicts []mergeRow
	Merged    []mergeRow
}

// merges reads the merges of the items the events tell of, by their
// last end: a row per item with a branch (an item run in its own git
// worktree).
type merges struct {
	rows  map[string]mergeRow
	order []string
}

// add takes one event of the job, in order.
func (m *merges) add(e eventlog.Event) {
	if e.Type != eventlog.TypeItemSucceeded && e.Type != eventlog.TypeItemFailed || e.Str("branch") == "" {
		return
	}
	if _, ok := m.rows[e.ItemID]; !ok {
		if m.rows == nil {
			m.rows = map[string]mergeRow{}
		}
		m.order = append(m.order, e.ItemID)
	}
	merged, _ := e.Fields["merged"].(bool)
	m.rows[e.ItemID] = mergeRow{Item: e.ItemID, Branch: e.Str("branch"), Commits: e.Int("commits"), Merged: merged,
		Conflicts: strs(e.Fields["conflicts"]), Failed: e.Type == eventlog.TypeItemFailed}
}

// view returns the merges; nil for a job whose items had no branches.
func (m *merges) view() *mergesView {
	if len(m.rows) == 0 {
		return nil
	}
	v := &mergesView{}
	var commits int64
	var empty, unmerged, failed int
	for _, id := range m.order {
		switch r := m.rows[id]; {
		case len(r.Conflicts) > 0:
			v.Conflicts = append(v.Conflicts, r)
		case r.Merged:
			v.Merged = append(v.Merged, r)
			commits += r.Commits
		case r.Failed:
			failed++
		case r.Commits > 0:
			unmerged++
		default:
			empty++
		}
	}
	parts := append([]string{fmt.Sprintf("%d merged (%d commits)", len(v.Merged), commits), fmt.Sprintf("%d in conflict", len(v.Conflicts))},
		said(count{empty, "without commits"}, count{unmerged, "not merged (map.merge: none)"}, count{failed, "failed before their merge"})...)
	v.Summary = fmt.Sprintf("%s = %d item(s) with a branch", strings.Join(parts, " + "), len(m.rows))
	return v
}

// strs is a list of strings as an event holds it: []string as written,
// []any as read back from the log.
func strs(v any) []string {
	switch l := v.(type) {
	case []string:
		return l
	case []any:
		out := make([]string, 0, len(l))
		for _, s := range l {
			out = append(out, fmt.Sprint(s))
		}
		return out
	}
	return nil
}

// count is a number of items and what they are.
type count struct {
	n    int
	what string
}

// said returns "N WHAT" for each of counts that is not zero.
func said(counts ...count) []string {
	var parts []string
	for _, c := range counts {
		if c.n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", c.n, c.what))
		}
	}
	return parts
}
