package job

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/runnerdev/runner/internal/attemptlog"
	"github.com/runnerdev/runner/internal/eventlog"
	"github.com/runnerdev/runner/internal/executor"
	"github.com/runnerdev/runner/internal/state"
	"github.com/runnerdev/runner/workflow"
)

// StepFailedError is a step whose failure stopped the workflow.
type StepFailedError struct {
	Phase string
	Err   error
}

func (e *StepFailedError) Error() string { return e.Err.Error() }
func (e *StepFailedError) Unwrap() error { return e.Err }

// PhaseError is a failure of a phase that is not a step's, such as the
// map phase's: the message is the error's, the phase is for the job's
// final line.
type PhaseError struct {
	Phase string
	Err   error
}

func (e *PhaseError) Error() string { return e.Err.Error() }
func (e *PhaseError) Unwrap() error { return e.Err }

// FailedPhase returns the phase err stopped the job in (setup, map,
// reduce, merge; commands for a standard workflow), or "".
func FailedPhase(err error) string {
	var step *StepFailedError
	var phase *PhaseError
	switch {
	case errors.As(err, &step):
		return step.Phase
	case errors.As(err, &phase):
		return phase.Phase
	}
	return ""
}

// PhaseResult counts what a phase's steps did.
type PhaseResult struct {
	Succeeded, Failed, Skipped int
	Handled                    []error // failures that did not stop the workflow
}

// RunPhase runs steps in order in the job's scope, skipping those the
// journal records as finished (restoring their variables) and journaling
// each one that finishes; the steps of a parallel: block run at once
// (parallel.go). It stops at the first failure that is not handled.
func (j *Job) RunPhase(ctx context.Context, phase string, steps []*workflow.Step) (PhaseResult, error) {
	p := &phaseRun{j: j, phase: phase}
	done := j.done[phase]
	for group := range workflow.Groups(steps) {
		var todo []*workflow.Step
		for _, step := range group {
			if rec, ok := done[step.Index]; ok {
				executor.ResumedOutput(step, phase, j.scope)
				j.applyVars(phase, executor.RecordedVars(rec))
				p.pr.count(executor.StepStatus(rec.Status))
				p.finished++
				continue
			}
			todo = append(todo, step)
		}
		if len(todo) == 0 {
			continue
		}
		if ctx.Err() != nil {
			return p.pr, context.Cause(ctx)
		}
		var err error
		if block := todo[0].Parallel; block != nil {
			err = p.parallel(ctx, block, todo)
		} else {
			err = p.step(ctx, todo[0])
		}
		if err != nil {
			return p.pr, err
		}
	}
	return p.pr, nil
}

// phaseRun is a run of a phase's steps.
type phaseRun struct {
	j        *Job
	phase    string
	pr       PhaseResult
	finished int // steps of the phase finished, in this run and those before
}

// step runs one step in the job's scope.
func (p *phaseRun) step(ctx context.Context, step *workflow.Step) error {
	j := p.j
	out, flush := j.out, func() {}
	if j.tag {
		out, flush = j.tagged(step.Label(p.phase))
	}
	run, log := j.stepRun(p.phase, step, out)
	res := j.exec.RunStep(ctx, step, run)
	flush()
	log.Close()
	if err := p.ended(ctx, step, res); err != nil {
		return err
	}
	j.applyVars(p.phase, res.Vars)
	return nil
}

// ended counts and journals a step that ran to its end; a failure that
// stops the workflow is returned as a StepFailedError (the cause of
// ctx's end when ctx ended), and not journaled: the step runs again on
// resume.
func (p *phaseRun) ended(ctx context.Context, step *workflow.Step, res executor.StepResult) error {
	j := p.j
	if err := j.eventLogErr(); err != nil {
		return err
	}
	if res.Fatal() {
		p.pr.Failed++
		if ctx.Err() != nil {
			return context.Cause(ctx)
		}
		return &StepFailedError{Phase: p.phase, Err: res.Err}
	}
	p.pr.count(res.Status)
	if res.Err != nil {
		p.pr.Handled = append(p.pr.Handled, j.secrets.MaskError(res.Err))
	}
	rec := res.Record(step)
	rec.Phase, rec.Vars = p.phase, j.secrets.Seal(rec.Vars)
	if err := j.journal.Append(rec); err != nil {
		return err
	}
	if p.finished++; p.phase == PhaseCommands {
		return j.stepsDone(p.finished)
	}
	return nil
}

// stepRun is the run of a step of phase in the job's scope: its output
// goes, masked, to out (the job's output) and to the step's log, each
// attempt's after a header; its agents' raw stream to its stream log.
func (j *Job) stepRun(phase string, step *workflow.Step, out [2]io.Writer) (executor.Run, *attemptlog.File) {
	log := attemptlog.Open(j.st.Layout().StepLog(phase, step.Index))
	tee := func(w io.Writer) io.Writer {
		if w == nil {
			return executor.MaskOutput(log, j.exec.Mask)
		}
		return executor.MaskOutput(io.MultiWriter(w, log), j.exec.Mask)
	}
	kind := attemptlog.RunFirst
	if j.resumed {
		kind = attemptlog.RunResume
	}
	label := step.Label(phase)
	begin := func(n int) {
		log.Begin(attemptlog.Header{Kind: attemptlog.Step, Name: label, Attempt: n, Run: kind, Start: time.Now()})
	}
	return executor.Run{Scope: j.scope, Dir: j.dir, Worktree: j.worktree, Phase: phase, Stdout: tee(out[0]), Stderr: tee(out[1]), Attempt: begin,
		StreamLog: j.st.Layout().StepStream(phase, step.Index)}, log
}

// stepsDone saves how many of a standard workflow's steps have finished,
// in this run and the ones before, as each one finishes: `runner jobs`
// shows it while the job runs, and after a run killed with -9.
func (j *Job) stepsDone(n int) error {
	return j.UpdateMeta(func(m *state.Meta) { m.StepsDone = n })
}

// applyVars sets the variables a finished step defined; setup captures are
// also readable as ${setup.NAME}.
func (j *Job) applyVars(phase string, vars map[string]any) {
	j.scope.Apply(vars)
	if phase != PhaseSetup {
		return
	}
	for name, v := range vars {
		if !strings.Contains(name, ".") {
			j.scope.SetIn("setup", name, v)
		}
	}
}

func (pr *PhaseResult) count(s executor.StepStatus) {
	switch s {
	case executor.StepSucceeded:
		pr.Succeeded++
	case executor.StepFailed:
		pr.Failed++
	case executor.StepSkipped:
		pr.Skipped++
	}
}

// Phases of a job, as named in the journal.
const (
	PhaseCommands = workflow.PhaseCommands
	PhaseSetup    = workflow.PhaseSetup
	PhaseReduce   = workflow.PhaseReduce
	PhaseMerge    = workflow.PhaseMerge // the merge: block, after reduce
)

// RunStandard runs a standard workflow's steps.
func (j *Job) RunStandard(ctx context.Context) (PhaseResult, error) {
	return j.RunPhase(ctx, PhaseCommands, j.wf.Steps)
}

// StatusOf classifies how a job run under ctx ended.
func StatusOf(ctx context.Context, err error) state.Status {
	switch {
	case err == nil:
		return state.Completed
	case ctx.Err() != nil:
		return state.Interrupted
	}
	return state.Failed
}

// Finish records how the job ended (status, exit code, final event) and
// releases it.
func (j *Job) Finish(status state.Status, exitCode int, err error, fields map[string]any) error {
	ran := time.Since(j.started)
	j.emit(eventlog.JobFinished(string(status), exitCode, ran, err, fields))
	j.mu.Lock()
	m := &j.st.Meta
	m.Status, m.ExitCode = status, exitCode
	m.RanMS += ran.Milliseconds()
	m.Finished, m.PID = time.Now(), 0
	if err != nil {
		m.Error = err.Error()
	}
	serr := j.st.Save()
	j.mu.Unlock()
	j.close()
	if serr != nil {
		return fmt.Errorf("job %s: %w", j.ID(), serr)
	}
	return j.eventLogErr()
}

// killedRun is how long the last run of the job m, whose event log is at
// path, went on before its process died without recording an end: from
// its start (m.RunStarted) to its last event, read from the log's end.
// A job of a runner that did not record its runs' starts has its log read
// for the last run's start. 0 when the log cannot be read.
func killedRun(m state.Meta, path string) time.Duration {
	last, ok, err := eventlog.Last(path)
	if err != nil || !ok {
		return 0
	}
	start := m.RunStarted
	if start.IsZero() {
		_ = eventlog.Scan(path, eventlog.Query{Types: []eventlog.Type{eventlog.TypeJobStarted, eventlog.TypeJobResumed}}, func(e eventlog.Event) error {
			start = e.Time
			return nil
		})
	}
	if start.IsZero() || last.Time.Before(start) {
		return 0
	}
	return last.Time.Sub(start)
}

// Elapsed is the time since this process started or resumed the job.
func (j *Job) Elapsed() time.Duration { return time.Since(j.started) }
