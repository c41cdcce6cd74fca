package itemrun

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/runnerdev/runner/internal/eventlog"
	"github.com/runnerdev/runner/internal/executor"
	"github.com/runnerdev/runner/internal/itemtask"
	"github.com/runnerdev/runner/internal/job"
	"github.com/runnerdev/runner/internal/state"
	"github.com/runnerdev/runner/internal/workspace"
	"github.com/runnerdev/runner/mapreduce/items"
	"github.com/runnerdev/runner/workflow"
)

// ErrNoMap refuses to run the items of a job that has none (a standard
// workflow's).
var ErrNoMap = errors.New("it has no map items")

// OpenStored opens stored job id of opts.Store, as job.OpenWorker does
// (without its lock, log or journal), to run its items in this process
// for the process that runs the job (a `runner agent` process), and
// returns the runner of its tasks. The events of its steps go to emit; its
// items' output goes to their logs, and to live as it comes when live is
// not nil. The process runs in the directory the job's process was
// started in, so that it finds the job's repository and the same place
// in it.
func OpenStored(ctx context.Context, id string, opts job.Options, emit func(eventlog.Event), live *itemtask.Live) (*Runner, error) {
	opts.Context = ctx
	w, err := job.OpenWorker(id, opts, emit)
	if err != nil {
		return nil, err
	}
	wf := w.Workflow()
	if wf.Mode != workflow.MapReduce {
		return nil, fmt.Errorf("job %s is a standard workflow: %w", id, ErrNoMap)
	}
	refs := workspace.JobRefs{ID: id, ItemBranches: w.Meta().ItemBranches}
	trees, err := workspace.OpenWorktrees(ctx, refs, wf.Map, w.Executor().Env, w.Layout())
	if err != nil {
		return nil, err
	}
	return NewRunner(w.Executor(), w.Scope(), wf.Map, w.ItemLogPath, trees, live), nil
}

// OpenPortable opens, on the NATS worker named worker, a job from the
// portable form its coordinator sent (itemtask.Job.Portable) as a copy in
// dir, its steps' events going to emit and its items' output to live (nil:
// to their logs only), to run its items there. Its error
// says why this worker cannot run them: a secret the job needs that this
// environment lacks, an environment it cannot resolve, no map phase. The
// job's env commands end with ctx.
func OpenPortable(ctx context.Context, portable json.RawMessage, dir, worker string, emit func(eventlog.Event), live *itemtask.Live) (itemtask.Opened, error) {
	var p job.Portable
	if err := json.Unmarshal(portable, &p); err != nil {
		return itemtask.Opened{}, fmt.Errorf("the job's portable form: %w", err)
	}
	if err := missingSecrets(p.Meta.Secrets, worker); err != nil {
		return itemtask.Opened{}, err
	}
	jw, err := job.OpenPortable(p, state.Store{Dir: dir}, job.Options{Context: ctx, Stdout: io.Discard, Stderr: io.Discard}, emit)
	if err != nil {
		return itemtask.Opened{}, fmt.Errorf("worker %s cannot run job %s: %w", worker, p.Meta.ID, err)
	}
	wf := jw.Workflow()
	if wf.Mode != workflow.MapReduce || wf.Map == nil {
		return itemtask.Opened{}, fmt.Errorf("job %s has no map phase", p.Meta.ID)
	}
	// The secrets the file lists without a value are this environment's.
	if err := missingSecrets(wf.EnvSecrets, worker); err != nil {
		return itemtask.Opened{}, err
	}
	x := jw.Executor()
	x.Env = append(x.Env, "RUNNER_WORKER="+worker)
	trees, repo, err := portableTrees(ctx, p, wf.Map, x.Env, jw.Layout(), filepath.Join(dir, "git"))
	if err != nil {
		return itemtask.Opened{}, fmt.Errorf("worker %s cannot run job %s: %w", worker, p.Meta.ID, err)
	}
	opened := itemtask.Opened{Runner: NewRunner(x, jw.Scope(), wf.Map, jw.ItemLogPath, trees, live), Mask: jw.Mask, LogPath: jw.ItemLogPath, Repo: repo, Last: LastStep(wf.Map.Template)}
	if trees != nil {
		opened.Hold = trees.Admin
		opened.Branch = func(t itemtask.Task) string { return trees.TreeOf(taskItem(t)).Branch }
		opened.Discard = func(ctx context.Context, t itemtask.Task) error { return trees.DiscardItem(ctx, taskItem(t)) }
	}
	return opened, nil
}

// taskItem is the item of t as far as its worktree's names need it.
func taskItem(t itemtask.Task) *items.Item { return &items.Item{Index: t.Index, ID: t.ItemID} }

// portableTrees are the items' worktrees of a job opened on a NATS worker
// (nil when its map runs without isolation), made from the commit each
// task names in the repository this process is in (the worker's
// --work-dir, a clone of the job's) or, when it is in none, in one made
// at made; their directories are in the job's copy. It returns the
// repository's directory too ("" for this process's).
func portableTrees(ctx context.Context, p job.Portable, m *workflow.MapPhase, env []string, layout state.Layout, made string) (*workspace.Worktrees, string, error) {
	if workspace.ItemBranches(m, p.Meta.ID) == "" {
		return nil, "", nil
	}
	repo, err := workspace.WorkerRepo(ctx, made, env)
	if err != nil {
		return nil, "", err
	}
	refs := workspace.JobRefs{ID: p.Meta.ID, ItemBranches: p.Meta.ItemBranches, Repo: repo}
	trees, err := workspace.OpenWorktrees(ctx, refs, m, env, layout)
	return trees, repo, err
}

// LastStep reports whether a step's record is the last of a run of
// template that goes on to its outcome (itemtask.Opened.Last): the
// template's last step, not waiting to retry. Nil for no template.
func LastStep(template []*workflow.Step) func(itemtask.StepRecord) bool {
	if len(template) == 0 {
		return nil
	}
	last := template[len(template)-1].Index
	return func(rec itemtask.StepRecord) bool {
		return rec.Index == last && rec.Status != string(executor.StepRetrying)
	}
}

// missingSecrets is an error naming the secrets among names that the
// environment of worker lacks.
func missingSecrets(names []string, worker string) error {
	var missing []string
	for _, name := range names {
		if _, ok := os.LookupEnv(name); !ok {
			missing = append(missing, name)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	return fmt.Errorf("secret %s is not set on worker %s", strings.Join(missing, ", "), worker)
}
