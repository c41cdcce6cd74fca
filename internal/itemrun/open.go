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
	return NewRunner(w.Executor(), w.Scope(), wf.Map, w.Layout(), trees, live), nil
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
	trees, err := portableTrees(ctx, p, wf.Map, x.Env, jw.Layout(), filepath.Join(dir, "git"))
	if err != nil {
		return itemtask.Opened{}, fmt.Errorf("worker %s cannot run job %s: %w", worker, p.Meta.ID, err)
	}
	opened := itemtask.Opened{Runner: NewRunner(x, jw.Scope(), wf.Map, jw.Layout(), trees, live), Mask: jw.Mask, LogPath: jw.ItemLogPath, Last: LastStep(wf.Map.Template)}
	if trees != nil {
		opened.Git = trees
	}
	return opened, nil
}

// portableTrees are the items' worktrees of a job opened on a NATS worker
// (nil when its map runs without isolation), made from the commit each
// task names in a repository of the worker's own, made at dir
// (workspace.WorkerRepo); their directories are in the job's copy.
func portableTrees(ctx context.Context, p job.Portable, m *workflow.MapPhase, env []string, layout state.Layout, dir string) (*workspace.Worktrees, error) {
	if workspace.ItemBranches(m, p.Meta.ID) == "" {
		return nil, nil
	}
	if err := workspace.WorkerRepo(ctx, dir, env); err != nil {
		return nil, err
	}
	refs := workspace.JobRefs{ID: p.Meta.ID, ItemBranches: p.Meta.ItemBranches, Repo: dir}
	return workspace.OpenWorktrees(ctx, refs, m, env, layout)
}

// LastStep reports whether a step's record is the last of a run of
// template that goes on to its outcome (itemtask.Opened.Last): the
// template's last step, not waiting to retry. Nil for no template.
func LastStep(template []*workflow.Step) func(state.StepRecord) bool {
	if len(template) == 0 {
		return nil
	}
	last := template[len(template)-1].Index
	return func(rec state.StepRecord) bool {
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
