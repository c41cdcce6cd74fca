package cmd

import (
	"errors"
	"io/fs"
	"os"
	"strconv"
	"strings"

	"github.com/runnerdev/runner/internal/job"
	"github.com/runnerdev/runner/internal/state"
	"github.com/runnerdev/runner/workflow"
)

// jobStep is a step of a job's workflow, in its phase, and the size of its
// log (0: none).
type jobStep struct {
	phase string
	index int // 0-based, in its phase
	label string
	id    string
	size  int64
}

// workflowPhase is a phase of a workflow and its steps.
type workflowPhase struct {
	name  string
	steps []*workflow.Step
}

// phasesOf returns the phases of wf that have steps, in the order they
// run.
func phasesOf(wf *workflow.Workflow) []workflowPhase {
	phases := []workflowPhase{{job.PhaseCommands, wf.Steps}, {job.PhaseSetup, wf.Setup}, {job.PhaseReduce, wf.Reduce}}
	if wf.Merge != nil {
		phases = append(phases, workflowPhase{job.PhaseMerge, wf.Merge.Steps})
	}
	return phases
}

// jobSteps returns the steps of the job's workflow copy, phase by phase
// in the order they run.
func jobSteps(j *state.Job) ([]jobStep, error) {
	wf, err := workflow.Load(j.WorkflowCopy())
	if err != nil {
		return nil, err
	}
	var out []jobStep
	for _, p := range phasesOf(wf) {
		for _, s := range p.steps {
			out = append(out, jobStep{phase: p.name, index: s.Index, label: s.Label(p.name), id: s.ID})
		}
	}
	return out, nil
}

// findStep returns the job's step that arg names: by label (its name, its
// id, or "PHASE step N"), by id, by its log's name (PHASE-N), or, for a
// standard workflow, by its number from 1.
func findStep(j *state.Job, arg string) (jobStep, error) {
	steps, err := jobSteps(j)
	if err != nil {
		return jobStep{}, err
	}
	matches := []func(jobStep) bool{
		func(s jobStep) bool { return s.label == arg },
		func(s jobStep) bool { return s.id != "" && s.id == arg },
		func(s jobStep) bool { return strings.TrimSuffix(state.StepLogName(s.phase, s.index), ".log") == arg },
		func(s jobStep) bool { return s.phase == job.PhaseCommands && strconv.Itoa(s.index+1) == arg },
	}
	for _, match := range matches {
		for _, s := range steps {
			if match(s) {
				return s, nil
			}
		}
	}
	return jobStep{}, usagef("job %s has no step %q (a step's name, id, or number from 1; PHASE-N for setup, reduce and merge steps)", j.Meta.ID, arg)
}

// stepLogs returns the job's steps that have a log, in the order they run.
func stepLogs(j *state.Job) ([]jobStep, error) {
	entries, err := os.ReadDir(j.Layout().StepLogs)
	if errors.Is(err, fs.ErrNotExist) || (err == nil && len(entries) == 0) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	steps, err := jobSteps(j)
	if err != nil {
		return nil, err
	}
	var out []jobStep
	for _, s := range steps {
		if info, err := os.Stat(j.Layout().StepLog(s.phase, s.index)); err == nil && info.Mode().IsRegular() {
			s.size = info.Size()
			out = append(out, s)
		}
	}
	return out, nil
}
