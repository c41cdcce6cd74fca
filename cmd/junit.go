package cmd

import (
	"os"

	"github.com/runnerdev/runner/internal/job"
	"github.com/runnerdev/runner/internal/report"
	"github.com/runnerdev/runner/workflow"
)

// writeJUnit writes the JUnit report of a job as its events tell it so
// far (a run that ended, a dlq retry) to path, reading its event log line
// by line; a report cut short by an error is removed.
func writeJUnit(path string, j *job.Job) error {
	wf := j.Workflow()
	junit := report.JUnitJob{Meta: j.Meta(), MapReduce: wf.Mode == workflow.MapReduce, EventLog: j.Layout().Events, StepLogs: map[report.StepRef]string{}}
	for _, p := range phasesOf(wf) {
		for _, s := range p.steps {
			junit.StepLogs[report.StepRef{Phase: p.name, Label: s.Label(p.name)}] = j.Layout().StepLog(p.name, s.Index)
		}
	}
	if !junit.MapReduce {
		for _, s := range wf.Steps {
			junit.Steps = append(junit.Steps, s.Label(workflow.PhaseCommands))
		}
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	err = report.WriteJUnit(f, junit, nil)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(path)
	}
	return err
}
