package itemrun

import (
	"context"
	"errors"
	"io"
	"strconv"
	"time"

	"github.com/runnerdev/runner/internal/attemptlog"
	"github.com/runnerdev/runner/internal/crashpoint"
	"github.com/runnerdev/runner/internal/eventlog"
	"github.com/runnerdev/runner/internal/executor"
	"github.com/runnerdev/runner/internal/items"
	"github.com/runnerdev/runner/internal/itemtask"
	"github.com/runnerdev/runner/internal/state"
	"github.com/runnerdev/runner/internal/workspace"
	"github.com/runnerdev/runner/retryv2"
	"github.com/runnerdev/runner/workflow"
)

// Runner runs the tasks of one job's agent template in this process: for
// the job itself (Local) and for `runner agent` processes.
type Runner struct {
	exec    *executor.Executor
	scope   *executor.Scope // the job's, after setup
	steps   []*workflow.Step
	timeout time.Duration        // agent_timeout; 0 = none
	logs    state.Layout         // where the items' logs are
	trees   *workspace.Worktrees // map.isolation: worktree; nil for none
	live    *itemtask.Live       // nil: the items' output goes to their logs only
}

// NewRunner returns a runner of m's template with x in scope (the job's
// variables after setup), writing each item's output to its log in logs
// (and its agents' raw stream to its stream log), each item in a worktree
// of trees (nil: in this process's directory), showing the items' output
// on live too when it is not nil.
func NewRunner(x *executor.Executor, scope *executor.Scope, m *workflow.MapPhase, logs state.Layout, trees *workspace.Worktrees, live *itemtask.Live) *Runner {
	return &Runner{exec: x, scope: scope, steps: m.Template, timeout: m.AgentTimeout, logs: logs, trees: trees, live: live}
}

// LocalCapabilities are what Local does: everything.
var LocalCapabilities = itemtask.Capabilities{Checkpoints: true, LiveEvents: true, SlotRelease: true, Worktrees: true}

// Local runs a job's tasks in this process with r, the runner of its
// template made after its setup.
func Local(r *Runner) itemtask.Backend {
	return itemtask.Backend{Name: "this process", Can: LocalCapabilities, Open: func(_ context.Context, _ itemtask.Job, h itemtask.Host) (itemtask.Dispatcher, error) {
		return &localDispatcher{runner: r, host: h}, nil
	}}
}

// localDispatcher runs tasks in this process, reporting to its host.
type localDispatcher struct {
	runner *Runner
	host   itemtask.Host
}

var _ itemtask.Dispatcher = (*localDispatcher)(nil)

func (d *localDispatcher) Dispatch(ctx context.Context, t itemtask.Task) (itemtask.Outcome, error) {
	return d.runner.Run(ctx, t, d.host.Slot(t.DispatchID), func(rec state.StepRecord) error { return d.host.Checkpoint(t.DispatchID, rec) })
}

// Recorded does nothing: a local outcome is nobody's message.
func (d *localDispatcher) Recorded(context.Context, string) {}

// Close does nothing: the runner holds nothing between tasks.
func (d *localDispatcher) Close() error { return nil }

// maxItemJSONEnv is the largest item passed in $RUNNER_ITEM_JSON; a larger
// one would risk the kernel's limit on one environment string.
const maxItemJSONEnv = 64 << 10

// agentTimeout is the cause of an agent that ran out of agent_timeout.
type agentTimeout struct{ d time.Duration }

func (e *agentTimeout) Error() string { return "agent timed out after " + e.d.String() }

// Run runs the template once for t, after the steps t.Checkpoints says
// are done; it gives slot back while a step waits out a delay, and saves
// each step that finishes or waits to retry with save before the next one
// starts. It returns an error, and no outcome, when ctx ended or a save
// failed.
func (r *Runner) Run(ctx context.Context, t itemtask.Task, slot itemtask.Slot, save func(state.StepRecord) error) (itemtask.Outcome, error) {
	start := time.Now()
	it, err := ItemOf(t)
	if err != nil {
		return itemtask.Outcome{}, err
	}
	sc := r.scope.Child()
	executor.StartItemOutputs(sc)
	sc.Set("item", it.Value)
	sc.Set("item_id", it.ID)
	sc.Set("item_index", it.Index)
	sc.Set("item_json", string(it.Raw))
	if t.Total > 0 {
		sc.Set("item_total", t.Total)
	}
	if _, ok := it.Value.(string); ok {
		sc.Alias("item.item", "item") // Prodigy's spelling for a plain-line item
	}
	env := []string{"RUNNER_ITEM_ID=" + it.ID, "RUNNER_ITEM_INDEX=" + strconv.Itoa(it.Index)}
	if len(it.Raw) <= maxItemJSONEnv {
		env = append(env, "RUNNER_ITEM_JSON="+string(it.Raw))
	}
	var dir, branch, worktree string
	if r.trees != nil {
		tree, err := r.trees.Acquire(ctx, it, len(t.Checkpoints) > 0, t.Tip)
		if ctx.Err() != nil {
			// Interrupted: it does not count (the branch named as below).
			return itemtask.Outcome{Branch: tree.Branch}, context.Cause(ctx)
		}
		if err != nil {
			// The item's failure, as any step's: its runner is not lost.
			return itemtask.Outcome{DispatchID: t.DispatchID, Duration: time.Since(start), Failed: true, Failure: itemtask.Failure{
				Attempt: t.Attempt, At: time.Now(), Kind: itemtask.KindWorktree, ExitCode: -1, Message: err.Error(), Duration: time.Since(start),
			}}, nil
		}
		if !tree.Kept {
			// A fresh worktree lacks what the saved steps did in theirs
			// (they ran on another worker): the run starts over.
			t.Checkpoints = nil
		}
		// A worktree that could not be removed is removed with the job's
		// at its end.
		defer r.trees.CloseItem(ctx, tree)
		crashpoint.Hit(crashpoint.ItemWorktreeAdded)
		defer crashpoint.Hit(crashpoint.ItemStepsDone) // before closeItem
		dir, branch, worktree = r.trees.ItemDir(tree), tree.Branch, tree.Path
		sc.Set("worktree", map[string]any{"path": tree.Path, "branch": branch})
		env = append(env, "RUNNER_WORKTREE="+tree.Path)
	}
	logFile := attemptlog.Open(r.logs.ItemLog(it.ID))
	if t.Run != "" {
		logFile.Begin(attemptlog.Header{Kind: attemptlog.Item, Name: it.ID, Attempt: t.Attempt, Run: t.Run, Start: start})
	}
	defer logFile.Close()
	var itemOut, itemErr io.Writer = logFile, logFile
	if r.live != nil {
		liveOut, liveErr, flush := r.live.Item(it.ID)
		defer flush()
		itemOut, itemErr = io.MultiWriter(logFile, liveOut), io.MultiWriter(logFile, liveErr)
	}
	var stdout executor.OutputTail
	var saveErr error
	checkpoint := func(rec state.StepRecord) error {
		if err := save(rec); err != nil {
			saveErr = err
		}
		return saveErr
	}
	run := executor.Run{
		Scope:     sc,
		Dir:       dir,
		Worktree:  branch,
		Env:       env,
		ItemID:    it.ID,
		Phase:     workflow.PhaseMap,
		Stdout:    io.MultiWriter(&stdout, itemOut),
		Stderr:    itemErr,
		Slot:      slot,
		Waiting:   checkpoint,
		StreamLog: r.logs.ItemStream(it.ID),
	}
	saved := map[int]state.StepRecord{}
	for _, rec := range t.Checkpoints {
		saved[rec.Index] = rec
	}
	actx, cancel := ctx, context.CancelFunc(func() {})
	if r.timeout > 0 {
		actx, cancel = context.WithTimeoutCause(ctx, r.timeout, &agentTimeout{r.timeout})
	}
	defer cancel()
	var spent *eventlog.AgentUsage // what the steps' agents spent
	outcome := func() itemtask.Outcome {
		return itemtask.Outcome{DispatchID: t.DispatchID, Output: stdout.String(), Duration: time.Since(start), Branch: branch, Worktree: worktree, Usage: spent}
	}
	for _, step := range r.steps {
		run.From = nil
		if rec, ok := saved[step.Index]; ok && rec.Status == string(executor.StepRetrying) {
			run.From = &rec
		} else if ok {
			executor.ResumedOutput(step, workflow.PhaseMap, sc)
			sc.Apply(executor.RecordedVars(rec))
			stdout.Write([]byte(rec.Output))
			continue
		}
		res := r.exec.RunStep(actx, step, run)
		spent = eventlog.AddUsage(spent, res.Usage)
		switch {
		case ctx.Err() != nil:
			// Interrupted: it does not count; the branch is named for a
			// NATS worker, which deletes its copy (the item runs again
			// from the tip its task names, here or elsewhere).
			return itemtask.Outcome{Branch: branch}, context.Cause(ctx)
		case saveErr != nil:
			return itemtask.Outcome{}, saveErr
		case !res.Fatal():
			rec := res.Record(step)
			rec.Output = res.Outcome.Stdout
			if err := checkpoint(rec); err != nil {
				return itemtask.Outcome{}, err
			}
			continue
		}
		f := itemtask.Failure{
			Attempt: t.Attempt, At: time.Now(), Kind: res.Outcome.Kind, ExitCode: res.Outcome.ExitCode,
			Message: res.Err.Error(), StderrTail: res.Outcome.Stderr, Step: step.Label(workflow.PhaseMap), Duration: time.Since(start),
		}
		var timeout *agentTimeout
		if ctx.Err() == nil && errors.As(context.Cause(actx), &timeout) {
			f.Kind, f.ExitCode = retryv2.KindTimeout, 124
		}
		if f.Kind == "" {
			f.Kind = "failed" // e.g. a capture or condition that could not be evaluated
		}
		out := outcome()
		out.Failed, out.Failure = true, f
		return out, nil
	}
	return outcome(), nil
}

// ItemOf is the item a task is about.
func ItemOf(t itemtask.Task) (*items.Item, error) {
	v, err := t.ItemValue()
	if err != nil {
		return nil, err
	}
	return &items.Item{Index: t.Index, ID: t.ItemID, Raw: t.Item, Value: v}, nil
}
