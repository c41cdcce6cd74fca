package jobtree

import (
	"context"
	"fmt"

	"github.com/runnerdev/runner/internal/job"
)

// RunStandard runs a started or resumed standard workflow that runs in a
// git worktree (workflow.Workflow.RunsInWorktree): its commands run in
// the job worktree on the job branch, as every Prodigy workflow runs in a
// worktree. When the ending merges (asked for, or answered yes) a job
// that succeeded then merges that branch into the one it started on,
// through the merge: block or git merge. The worktree is gone when it
// returns; the branch stays.
func RunStandard(ctx context.Context, j *job.Job, ending Ending) (pr job.PhaseResult, end End, err error) {
	t, err := Open(ctx, j.ID(), j.Executor().Env, j.Layout())
	if err != nil {
		return pr, end, fmt.Errorf("the job's worktree: %w", err)
	}
	defer func() {
		if rerr := t.Remove(ctx); err == nil && rerr != nil {
			err = fmt.Errorf("removing the job worktree: %w", rerr)
		}
	}()
	if end, err = t.Begin(ctx, j, t.Ready); err != nil {
		return pr, end, err
	}
	if pr, err = j.RunStandard(ctx); err != nil || !ending.Merges(end) {
		return pr, end, err
	}
	end.Merged, err = t.MergeEnd(ctx, j, end.Target, ending.Starts)
	return pr, end, err
}
