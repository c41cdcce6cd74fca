package jobtree

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/runnerdev/runner/gitwork"
	"github.com/runnerdev/runner/job"
)

// How the job branch was merged into the branch the job started on
// (End.Merged).
const (
	MergedByGit   = "git"   // runner's own git merge --no-ff in the user's checkout
	MergedByBlock = "block" // the steps of the merge: block
)

// MergeError is a final merge that was asked for and not made: the
// user's checkout was not as the job left it, the merge conflicted and
// was aborted, or a step of the merge: block failed. The job's work stays
// on its branch.
type MergeError struct {
	Branch, Target string
	Err            error
}

func (e *MergeError) Error() string {
	return fmt.Sprintf("the job branch %s was not merged into %s: %v", e.Branch, e.Target, e.Err)
}

func (e *MergeError) Unwrap() error { return e.Err }

// target is the branch the job branch merges into: the one checked out
// where runner runs when the job starts, recorded in the job's metadata
// then and read from it on resume.
func (t *Tree) target(ctx context.Context, j *job.Job) (string, error) {
	if j.Resumed() {
		return j.Meta().TargetBranch, nil
	}
	branch, err := t.Git.In("").Branch(ctx)
	if err != nil {
		return "", err
	}
	return branch, j.SetTargetBranch(branch)
}

// MergeEnd merges the job branch into target at the end of a job that
// succeeded, and says how: the merge: block's steps when the file has one, run in the
// job worktree with ${merge.*} and journaled as the merge phase (so that
// a resumed job does not run a finished one again); else runner's own
// merge, in the user's checkout.
func (t *Tree) MergeEnd(ctx context.Context, j *job.Job, target string, starts func()) (string, error) {
	how, err := t.finalMerge(ctx, j, target, starts)
	if err != nil {
		if target == "" {
			target = "your branch"
		}
		return "", &MergeError{Branch: t.JobBranch, Target: target, Err: err}
	}
	return how, nil
}

// finalMerge is MergeEnd's work.
func (t *Tree) finalMerge(ctx context.Context, j *job.Job, target string, starts func()) (string, error) {
	if target == "" {
		return "", errors.New("HEAD was detached when the job started, so there is no branch to merge into")
	}
	block := j.Workflow().Merge
	if block == nil {
		return MergedByGit, t.mergeInto(ctx, target)
	}
	j.Define("merge", map[string]any{
		"worktree": t.Root, "source_branch": t.JobBranch, "target_branch": target, "session_id": t.JobID,
	})
	if t := block.Timeout; t > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, t, fmt.Errorf("the merge phase did not end within its timeout of %s", t))
		defer cancel()
	}
	if starts != nil {
		starts()
	}
	_, err := j.RunPhase(ctx, job.PhaseMerge, block.Steps)
	return MergedByBlock, err
}

// mergeInto merges the job branch into target in the user's checkout, with
// a merge commit, if that checkout is still on target and has no changes
// to tracked files: runner never merges into a branch the user left, nor
// mixes its merge with their work. A conflict aborts the merge, leaving
// the checkout as it was.
func (t *Tree) mergeInto(ctx context.Context, target string) error {
	ctx = context.WithoutCancel(ctx) // a merge is not left half done
	user := t.Git.In("")
	branch, err := user.Branch(ctx)
	switch {
	case err != nil:
		return err
	case branch == "":
		return fmt.Errorf("your checkout's HEAD is detached now, and the job started on %s", target)
	case branch != target:
		return fmt.Errorf("your checkout is on %s now, and the job started on %s", branch, target)
	}
	changed, err := user.ChangedPaths(ctx)
	if err != nil {
		return err
	}
	if len(changed) > 0 {
		return fmt.Errorf("your checkout has changes not committed (%s); commit or put them aside first", gitwork.Names(changed))
	}
	conflicts, err := user.Merge(ctx, t.JobBranch, "Merge "+t.JobBranch+" (runner job "+t.JobID+")")
	if err != nil {
		return err
	}
	if len(conflicts) > 0 {
		return fmt.Errorf("the merge conflicts in %s; it was aborted, and your checkout is as it was", strings.Join(conflicts, ", "))
	}
	return nil
}
