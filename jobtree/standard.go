package jobtree

import (
	"context"
	"fmt"

	"github.com/runnerdev/runner/job"
)

// RunStandard runs a started or resumed standard workflow that has a
// merge: block or merge_back: true: its commands run in the job worktree
// on the job branch, as every Prodigy workflow runs in a worktree. With
// merge (runner run --merge, merge_back: true) a job that succeeded then
// merges that branch into the one it started on, through the merge:
// block (starts is called before its steps) or git merge. The worktree is
// gone when it returns; the branch stays.
func RunStandard(ctx context.Context, j *job.Job, merge bool, starts func()) (pr job.PhaseResult, end End, err error) {
	t, err := Open(ctx, j.ID(), j.Executor().Env, j.Path)
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
	if pr, err = j.RunStandard(ctx); err != nil || !merge {
		return pr, end, err
	}
	end.Merged, err = t.MergeEnd(ctx, j, end.Target, starts)
	return pr, end, err
}
