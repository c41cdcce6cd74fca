package mapreduce

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/runnerdev/runner/executor"
	"github.com/runnerdev/runner/job"
	"github.com/runnerdev/runner/retryv2"
	"github.com/runnerdev/runner/workflow"
)

// Agent runs one item's agent template. Where items run is behind this
// interface: a local process slot today.
type Agent interface {
	// RunItem runs the template once for it, from where cp says an ended
	// process left this attempt. The caller holds slot; the agent gives it
	// back while the item waits out a delay. When ctx ends the outcome
	// does not count: the item stays pending.
	RunItem(ctx context.Context, it *Item, attempt int, slot retryv2.Slot, cp Checkpoints) Outcome
}

// Checkpoints are an item attempt's progress through the template: each
// step that finishes or waits to retry is saved before the next one
// starts or the slot is given back, so that after a crash the attempt goes
// on from the step that was running and no finished step runs again.
type Checkpoints struct {
	Saved []job.StepRecord           // by an ended process, in order
	Save  func(job.StepRecord) error // an error stops the item: Outcome.Err
}

// maxItemJSONEnv is the largest item passed in $RUNNER_ITEM_JSON; a larger
// one would risk the kernel's limit on one environment string.
const maxItemJSONEnv = 64 << 10

// localAgent runs the template's steps as local processes.
type localAgent struct {
	exec    *executor.Executor
	scope   *executor.Scope // the job's, after setup
	steps   []*workflow.Step
	timeout time.Duration // agent_timeout; 0 = none
	logDir  string
}

// agentTimeout is the cause of an agent that ran out of agent_timeout.
type agentTimeout struct{ d time.Duration }

func (e *agentTimeout) Error() string { return "agent timed out after " + e.d.String() }

func (a *localAgent) RunItem(ctx context.Context, it *Item, attempt int, slot retryv2.Slot, cp Checkpoints) Outcome {
	start := time.Now()
	sc := a.scope.Child()
	sc.Set("item", it.Value)
	sc.Set("item_id", it.ID)
	sc.Set("item_index", it.Index)
	sc.Set("item_json", string(it.Raw))
	if _, ok := it.Value.(string); ok {
		sc.Alias("item.item", "item") // Prodigy's spelling for a plain-line item
	}
	env := []string{"RUNNER_ITEM_ID=" + it.ID, "RUNNER_ITEM_INDEX=" + strconv.Itoa(it.Index)}
	if len(it.Raw) <= maxItemJSONEnv {
		env = append(env, "RUNNER_ITEM_JSON="+string(it.Raw))
	}
	logFile := &lazyFile{path: filepath.Join(a.logDir, "item-"+strconv.Itoa(it.Index)+".log")}
	defer logFile.Close()
	if attempt > 1 {
		fmt.Fprintf(logFile, "--- attempt %d ---\n", attempt)
	}
	var stdout executor.OutputTail
	var saveErr error
	save := func(rec job.StepRecord) error {
		if err := cp.Save(rec); err != nil {
			saveErr = err
		}
		return saveErr
	}
	run := executor.Run{
		Scope:   sc,
		Env:     env,
		Fields:  map[string]any{"item_id": it.ID},
		Stdout:  io.MultiWriter(&stdout, logFile),
		Stderr:  logFile,
		Slot:    slot,
		Waiting: save,
	}
	saved := map[int]job.StepRecord{}
	for _, rec := range cp.Saved {
		saved[rec.Index] = rec
	}
	actx, cancel := ctx, context.CancelFunc(func() {})
	if a.timeout > 0 {
		actx, cancel = context.WithTimeoutCause(ctx, a.timeout, &agentTimeout{a.timeout})
	}
	defer cancel()
	for _, step := range a.steps {
		run.From = nil
		if rec, ok := saved[step.Index]; ok && rec.Status == string(executor.StepRetrying) {
			run.From = &rec
		} else if ok {
			sc.Apply(executor.RecordedVars(rec))
			stdout.Write([]byte(rec.Output))
			continue
		}
		res := a.exec.RunStep(actx, step, run)
		switch {
		case ctx.Err() != nil:
			return Outcome{} // interrupted: does not count
		case saveErr != nil:
			return Outcome{Err: saveErr}
		case !res.Fatal():
			rec := res.Record(step)
			rec.Output = res.Outcome.Stdout
			if err := save(rec); err != nil {
				return Outcome{Err: err}
			}
			continue
		}
		f := Failure{
			Attempt: attempt, At: time.Now(), Kind: res.Outcome.Kind, ExitCode: res.Outcome.ExitCode,
			Message: res.Err.Error(), StderrTail: res.Outcome.Stderr, Step: step.Key(), Duration: time.Since(start),
		}
		var timeout *agentTimeout
		if ctx.Err() == nil && errors.As(context.Cause(actx), &timeout) {
			f.Kind, f.ExitCode = retryv2.KindTimeout, 124
		}
		if f.Kind == "" {
			f.Kind = "failed" // e.g. a capture or condition that could not be evaluated
		}
		return Outcome{Failed: true, Failure: f, Output: stdout.String(), Duration: time.Since(start)}
	}
	return Outcome{Output: stdout.String(), Duration: time.Since(start)}
}

// lazyFile is an item's log, created on its first write: items that print
// nothing leave no file behind.
type lazyFile struct {
	mu   sync.Mutex
	path string
	f    *os.File
	err  error
}

func (l *lazyFile) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil && l.err == nil {
		l.f, l.err = os.OpenFile(l.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	}
	if l.err != nil {
		return len(p), nil // a log that cannot be written does not fail the item
	}
	return l.f.Write(p)
}

func (l *lazyFile) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return nil
	}
	return l.f.Close()
}
