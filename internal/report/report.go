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
	Meta   state.Meta
	Events []eventlog.Event
	DLQ    []dlq.Item // the items of its dead-letter queue
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
func WriteHTML(w io.Writer, j Job) error {
	tl := buildTimeline(j.Events)
	if tl.start.IsZero() {
		return errNoEvents
	}
	return page().Execute(w, newView(j, tl))
}
