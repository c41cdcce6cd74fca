package report

import (
	"fmt"
	"time"

	"github.com/runnerdev/runner/internal/eventlog"
)

// stepRow is a step of setup, of a standard workflow or of reduce (not a
// map item's) in the table of steps: every run of the job that ran it
// counted.
type stepRow struct {
	Name     string
	Status   string // succeeded, failed, skipped, running or interrupted
	Attempts int
	Duration string
	ExitCode string // "" when no command of it ended
	run      time.Duration
	since    time.Time // its start, while it runs
}

// buildSteps returns the steps the events tell of, in the order they
// first started.
func buildSteps(events []eventlog.Event) []stepRow {
	var rows []stepRow
	index := map[string]int{}
	row := func(name string) *stepRow {
		i, ok := index[name]
		if !ok {
			i = len(rows)
			index[name] = i
			rows = append(rows, stepRow{Name: name})
		}
		return &rows[i]
	}
	for _, e := range events {
		if e.ItemID != "" {
			continue
		}
		switch e.Type {
		case eventlog.TypeStepStarted:
			r := row(e.Str("step"))
			r.Status, r.since = "running", e.Time
		case eventlog.TypeAttemptStarted:
			row(e.Str("step")).Attempts++
		case eventlog.TypeStepCompleted:
			row(e.Str("step")).end(e, "succeeded")
		case eventlog.TypeStepFailed:
			row(e.Str("step")).end(e, "failed")
		case eventlog.TypeStepSkipped:
			row(e.Str("step")).Status = "skipped"
		}
		if eventlog.JobEnded(e.Type) {
			for i := range rows {
				rows[i].interrupt(e)
			}
		}
	}
	for i := range rows {
		if r := &rows[i]; r.run > 0 || r.Status != "skipped" {
			r.Duration = r.run.Round(time.Millisecond).String()
		}
	}
	return rows
}

// end records the end of a run of the step, told by e.
func (r *stepRow) end(e eventlog.Event, status string) {
	r.Status = status
	if _, ok := e.Fields["exit_code"]; ok {
		r.ExitCode = fmt.Sprint(e.Int("exit_code"))
	}
	if !r.since.IsZero() {
		r.run += e.Time.Sub(r.since)
		r.since = time.Time{}
	}
}

// interrupt ends a run of the step that the end of a run of the job, e,
// ends: it was interrupted.
func (r *stepRow) interrupt(e eventlog.Event) {
	if r.since.IsZero() {
		return
	}
	r.run += e.Time.Sub(r.since)
	r.since, r.Status = time.Time{}, "interrupted"
}
