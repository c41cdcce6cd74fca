package job

import (
	"context"
	"fmt"

	"github.com/runnerdev/runner/internal/workspace"
)

// EnterWorktree readies the job worktree t for a started job (or, for a
// resumed one, with resume) and has the job's phases run in it. The caller
// removes the worktree when the job ends, even after an error.
func (j *Job) EnterWorktree(ctx context.Context, t *workspace.Tree, resume func(context.Context) error) (workspace.End, error) {
	end, err := t.Begin(ctx, j.resumed, j.Meta().TargetBranch, resume)
	if err == nil {
		j.SetDir(t.Dir(), t.JobBranch)
	}
	return end, err
}

// MergeEnd merges the job branch of t into the branch the job started on,
// at the end of a job that succeeded, and says how: the merge: block's
// steps when the file has one, run in the job worktree with ${merge.*},
// within the block's timeout, and journaled as the merge phase (so that a
// resumed job does not run a finished one again); else git merge in the
// user's checkout.
func (j *Job) MergeEnd(ctx context.Context, t *workspace.Tree) (string, error) {
	block := j.Workflow().Merge
	if block == nil {
		return t.MergeEnd(ctx, j.Meta().TargetBranch, j.Executor().Stderr, nil)
	}
	return t.MergeEnd(ctx, j.Meta().TargetBranch, j.Executor().Stderr, func(ctx context.Context, vars map[string]any) error {
		j.Define("merge", vars)
		if t := block.Timeout; t > 0 {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeoutCause(ctx, t, fmt.Errorf("the merge phase did not end within its timeout of %s", t))
			defer cancel()
		}
		_, err := j.RunPhase(ctx, PhaseMerge, block.Steps)
		return err
	})
}

// RunInWorktree runs a started or resumed standard workflow that runs in
// a git worktree (workflow.Workflow.RunsInWorktree): its commands run in
// the job worktree on the job branch, as every Prodigy workflow runs in a
// worktree. When the ending merges (asked for, or answered yes) a job
// that succeeded then merges that branch into the one it started on,
// through the merge: block or git merge. The worktree is gone when it
// returns; the branch stays.
func (j *Job) RunInWorktree(ctx context.Context, ending workspace.Ending) (pr PhaseResult, end workspace.End, err error) {
	t, err := workspace.Open(ctx, workspace.JobRefs{ID: j.ID()}, j.Executor().Env, j.Layout())
	if err != nil {
		return pr, end, fmt.Errorf("the job's worktree: %w", err)
	}
	defer func() {
		if rerr := t.Remove(ctx); err == nil && rerr != nil {
			err = fmt.Errorf("removing the job worktree: %w", rerr)
		}
	}()
	if end, err = j.EnterWorktree(ctx, t, t.Ready); err != nil {
		return pr, end, err
	}
	if pr, err = j.RunStandard(ctx); err != nil || !ending.Merges(end) {
		return pr, end, err
	}
	end.Merged, err = j.MergeEnd(ctx, t)
	return pr, end, err
}
