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
	Phase    string // setup, commands, reduce, merge; "" in the events of an earlier runner
	Name     string
	Status   string // succeeded, failed, skipped, running or interrupted
	Attempts int
	Duration string
	ExitCode string // "" when no command of it ended
	Cost     string // what its agents spent, "$0.19, 126k tokens"; "" when none reported it
	spent    *eventlog.AgentUsage
	run      time.Duration
	since    time.Time // its start, while it runs
}

// steps reads the steps the events tell of, in the order they first
// started: a row per phase and label, so that setup's and reduce's
// steps of the same label are apart.
type steps struct {
	rows  []stepRow
	index map[[2]string]int
}

// row is the row of the step e tells of.
func (s *steps) row(e eventlog.Event) *stepRow {
	key := [2]string{e.Str("phase"), e.Str("step")}
	i, ok := s.index[key]
	if !ok {
		if s.index == nil {
			s.index = map[[2]string]int{}
		}
		i = len(s.rows)
		s.index[key] = i
		s.rows = append(s.rows, stepRow{Phase: key[0], Name: key[1]})
	}
	return &s.rows[i]
}

// add takes one event of the job, in order.
func (s *steps) add(e eventlog.Event) {
	if e.ItemID != "" {
		return
	}
	switch e.Type {
	case eventlog.TypeStepStarted:
		r := s.row(e)
		r.Status, r.since = "running", e.Time
	case eventlog.TypeAttemptStarted:
		s.row(e).Attempts++
	case eventlog.TypeStepCompleted:
		s.row(e).end(e, "succeeded")
	case eventlog.TypeStepFailed:
		s.row(e).end(e, "failed")
	case eventlog.TypeStepSkipped:
		s.row(e).Status = "skipped"
	case eventlog.TypeAgentUsage:
		u, _ := e.Usage()
		r := s.row(e)
		r.spent = eventlog.AddUsage(r.spent, &u)
	}
	if eventlog.JobEnded(e.Type) {
		for i := range s.rows {
			s.rows[i].interrupt(e)
		}
	}
}

// table returns the rows of the steps, with their durations and what
// their agents spent.
func (s *steps) table() []stepRow {
	for i := range s.rows {
		r := &s.rows[i]
		if r.run > 0 || r.Status != "skipped" {
			r.Duration = r.run.Round(time.Millisecond).String()
		}
		if r.spent != nil {
			r.Cost = r.spent.String()
		}
	}
	return s.rows
}

// spent says whether an agent of a step reported what it spent: the
// table then has a cost column.
func (s *steps) spent() bool {
	for _, r := range s.rows {
		if r.spent != nil {
			return true
		}
	}
	return false
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
