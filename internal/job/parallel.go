package job

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/runnerdev/runner/internal/executor"
	"github.com/runnerdev/runner/internal/tagline"
	"github.com/runnerdev/runner/workflow"
)

// errFailFast is the cause of the cancel of a parallel: block's steps
// after one of them failed (fail_fast: true).
var errFailFast = errors.New("fail_fast")

// parallel runs the steps of block that have not finished, at most
// block.MaxParallel at once, each in a copy of the job's scope taken as
// the block starts: no step of the block reads what another sets. Each
// step is journaled as it ends; the variables they set land in the job's
// scope in the file's order once every step has ended. A step that fails
// the workflow stops the block: with FailFast the others are cancelled
// (their process groups signalled, as on a timeout or an interrupt) and
// none starts; without, every step runs. Either way the block returns
// once every started step has ended, with the first failure. A cancelled
// step is not journaled: resume runs it again.
//
// On the terminal, each line a step of the block writes is prefixed with
// its label and a tab (whole lines, never mixed); its log keeps its
// output as it came.
func (p *phaseRun) parallel(ctx context.Context, block *workflow.Parallel, steps []*workflow.Step) error {
	j := p.j
	bctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	limit := block.MaxParallel
	if limit == 0 {
		limit = len(steps)
	}
	type end struct {
		i   int
		res executor.StepResult
	}
	ends := make(chan end)
	vars := make([]map[string]any, len(steps))
	var failed error
	next, running := 0, 0
	// startMore starts the next steps while the block has room for them
	// and nothing stopped it.
	startMore := func() {
		for next < len(steps) && running < limit && bctx.Err() == nil && (failed == nil || !block.FailFast) {
			i, step := next, steps[next]
			run, log, flush := p.parallelRun(block, step)
			next++
			running++
			go func() {
				res := j.exec.RunStep(bctx, step, run)
				flush()
				log.Close()
				ends <- end{i, res}
			}()
		}
	}
	for startMore(); running > 0; startMore() {
		e := <-ends
		running--
		switch {
		case e.res.Fatal() && ctx.Err() == nil && errors.Is(context.Cause(bctx), errFailFast):
			continue // cancelled by another's failure: not finished
		case e.res.Fatal() && block.FailFast:
			cancel(fmt.Errorf("%w: %s failed", errFailFast, steps[e.i].Label(p.phase)))
		}
		startMore() // before the journal's writes
		if err := p.ended(ctx, steps[e.i], e.res); err == nil {
			vars[e.i] = e.res.Vars
		} else if failed == nil {
			failed = err
		}
	}
	for _, v := range vars {
		j.applyVars(p.phase, v)
	}
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	return failed
}

// parallelRun is the run of a step of a parallel: block: in its own copy
// of the job's scope, its events naming the block, its lines on the
// terminal tagged with its label; flush writes its last partial lines.
func (p *phaseRun) parallelRun(block *workflow.Parallel, step *workflow.Step) (executor.Run, io.Closer, func()) {
	j := p.j
	out, flush := j.tagged(step.Label(p.phase))
	run, log := j.stepRun(p.phase, step, out)
	run.Scope = j.scope.Child()
	run.Parallel = block.Label(p.phase)
	return run, log, flush
}

// tagged is the job's output (Options.Stdout, Stderr) with each line
// tagged with a step's label, and a function that writes the last
// partial lines: a parallel: block's steps' always, every step's with
// Options.Tag (run --tag), as map items' with their ids.
func (j *Job) tagged(label string) (out [2]io.Writer, flush func()) {
	var tagged []*tagline.Writer
	for k, w := range j.out {
		if w != nil {
			t := tagline.New(w, label+"\t")
			out[k], tagged = t, append(tagged, t)
		}
	}
	return out, func() {
		for _, t := range tagged {
			t.Flush()
		}
	}
}
