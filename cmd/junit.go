package cmd

import (
	"bytes"
	"os"

	"github.com/runnerdev/runner/internal/eventlog"
	"github.com/runnerdev/runner/internal/job"
	"github.com/runnerdev/runner/internal/report"
	"github.com/runnerdev/runner/workflow"
)

// writeJUnit writes the JUnit report of a job as its events tell it so
// far (a run that ended, a dlq retry) to path.
func writeJUnit(path string, j *job.Job) error {
	events, err := eventlog.Read(j.Layout().Events, eventlog.Query{})
	if err != nil {
		return err
	}
	wf := j.Workflow()
	junit := report.JUnitJob{Meta: j.Meta(), MapReduce: wf.Mode == workflow.MapReduce}
	if !junit.MapReduce {
		for _, s := range wf.Steps {
			junit.Steps = append(junit.Steps, s.Key())
		}
	}
	var xml bytes.Buffer
	if err := report.WriteJUnit(&xml, junit, events); err != nil {
		return err
	}
	return os.WriteFile(path, xml.Bytes(), 0o644)
}
