// Package report pictures a job from its events: an HTML page of its timeline and DLQ, and a JUnit XML report.
package report

import (
	"errors"
	"io"

	"github.com/runnerdev/runner/dlq"
	"github.com/runnerdev/runner/eventlog"
	"github.com/runnerdev/runner/state"
)

// errNoEvents is returned for a job whose event log is empty.
var errNoEvents = errors.New("the job has no events to report")

// WriteHTML writes the page of a job: its summary from m, the timeline of
// its events, and the items of its dead-letter queue.
func WriteHTML(w io.Writer, m state.Meta, events []eventlog.Event, dead []dlq.Item) error {
	tl := buildTimeline(events)
	if tl.start.IsZero() {
		return errNoEvents
	}
	return page.Execute(w, newView(m, tl, dead))
}
