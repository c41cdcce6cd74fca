package report

import (
	"github.com/runnerdev/runner/internal/eventlog"
	"github.com/runnerdev/runner/internal/state"
)

// buildTimeline reads events into their timeline.
func buildTimeline(events []eventlog.Event) timeline {
	b := newBuilder()
	for _, e := range events {
		b.add(e)
	}
	return b.timeline()
}

// buildSteps reads events into the rows of their steps.
func buildSteps(events []eventlog.Event) []stepRow {
	var s steps
	for _, e := range events {
		s.add(e)
	}
	return s.table()
}

// itemCounts makes the summary of items c whose events are events.
func itemCounts(c state.ItemCounts, events []eventlog.Event) countsView {
	f := failures{}
	for _, e := range events {
		f.add(e)
	}
	return newCounts(c, f)
}

// junit builds the document that WriteJUnit writes from events, with
// all its test cases.
func junit(job JUnitJob, events []eventlog.Event) junitSuites {
	b, err := readJUnit(job, events)
	if err != nil {
		panic(err)
	}
	defer b.ended.Close()
	doc := b.document(job.Meta)
	b.eachCase(func(c junitCase) error { doc.Suites[0].Cases = append(doc.Suites[0].Cases, c); return nil })
	return doc
}
