package report

import (
	"errors"
	"io"

	"github.com/runnerdev/runner/dlq"
	"github.com/runnerdev/runner/internal/eventlog"
	"github.com/runnerdev/runner/internal/state"
)

// errNoEvents is returned for a job whose event log is empty.
var errNoEvents = errors.New("the job has no events to report")

// Job is what the page of a job shows.
type Job struct {
	Meta state.Meta
	// EventLog is the path of the job's event log, read line by line
	// into the page; Events are its events when it is "".
	EventLog string
	Events   []eventlog.Event
	DLQ      []dlq.Item // the items of its dead-letter queue, or the first of them
	DLQTotal int        // the items in its dead-letter queue, when DLQ has the first only
	// Branches is where the work of a job that ran on a job branch is;
	// nil for a job that did not.
	Branches *Branches
}

// Branches is the git side of a job that ran on a job branch, as the
// repository has it now.
type Branches struct {
	Job    string // the job branch, runner/<id>
	Target string // the branch the job started on; "" when HEAD was detached
	// Gone says that the job branch is no longer in the repository;
	// Merged that Target has all its commits.
	Gone, Merged bool
	// Items are the items' branches still in the repository (a failed
	// item's, kept).
	Items []string
	// Unknown says why the repository could not be read ("" when it
	// was): the page then names the branches without their state.
	Unknown string
}

// WriteHTML writes the page of a job: its summary, the timeline of its
// events, its steps, and, as its kind has them, its merges and branches
// and the items of its dead-letter queue.
// The page holds what the events tell in memory that does not grow with
// the job's items: past the first maxBars attempts, the timeline merges
// them into cells.
func WriteHTML(w io.Writer, j Job) error {
	r := newReading()
	if err := j.eachEvent(r.add); err != nil {
		return err
	}
	tl := r.timeline.timeline()
	if tl.start.IsZero() {
		return errNoEvents
	}
	v := newView(j, tl)
	v.Steps, v.Merges = r.steps.table(), r.merges.view()
	v.StepCosts, v.Costliest = r.steps.spent(), r.costs.items
	if c := j.Meta.Items; c != nil {
		counts := newCounts(*c, r.failures)
		v.Counts = &counts
	}
	return page().Execute(w, v)
}

// eachEvent calls fn with each event of the job, in order.
func (j Job) eachEvent(fn func(eventlog.Event)) error { return eachEvent(j.EventLog, j.Events, fn) }

// eachEvent calls fn with each event of the log at path, read line by
// line, or, when path is "", of events.
func eachEvent(path string, events []eventlog.Event, fn func(eventlog.Event)) error {
	if path == "" {
		for _, e := range events {
			fn(e)
		}
		return nil
	}
	return eventlog.Scan(path, eventlog.Query{}, func(e eventlog.Event) error {
		fn(e)
		return nil
	})
}

// reading is what the page takes from the events, read once in order.
type reading struct {
	timeline *builder
	steps    steps
	failures failures
	merges   merges
	costs    costliest
}

func newReading() *reading { return &reading{timeline: newBuilder(), failures: failures{}} }

func (r *reading) add(e eventlog.Event) {
	r.timeline.add(e)
	r.steps.add(e)
	r.failures.add(e)
	r.merges.add(e)
	r.costs.add(e)
}
