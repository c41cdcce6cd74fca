package cmd

import (
	"bytes"
	"os"

	"github.com/runnerdev/runner/eventlog"
	"github.com/runnerdev/runner/report"
	"github.com/runnerdev/runner/workflow"
)

// writeJUnit writes the JUnit report of a finished job to path.
func writeJUnit(path string, j *workflow.Job) error {
	events, err := eventlog.Read(j.State.EventsPath(), eventlog.Query{})
	if err != nil {
		return err
	}
	job := report.JUnitJob{Meta: j.State.Meta, MapReduce: j.Workflow.Mode == workflow.MapReduce}
	if !job.MapReduce {
		for _, s := range j.Workflow.Steps {
			job.Steps = append(job.Steps, s.Key())
		}
	}
	var xml bytes.Buffer
	if err := report.WriteJUnit(&xml, job, events); err != nil {
		return err
	}
	return os.WriteFile(path, xml.Bytes(), 0o644)
}
