package workspace

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/runnerdev/runner/internal/gitwork"
)

// How the job branch was merged into the branch the job started on
// (End.Merged).
const (
	MergedByGit   = "git"   // runner's own git merge --no-ff in the user's checkout
	MergedByBlock = "block" // the steps of the merge: block
)

// Ending is what a job on a job branch does at its end once it
// succeeded: merge the job branch into the branch it started on, or
// leave it (the end of the job names it and the command that merges it).
type Ending struct {
	// Merge asks for the merge (runner run --merge, -y, merge_back: true).
	Merge bool
	// Ask, when Merge is false, asks the user whether to merge, given
	// where the job's work is; nil never asks.
	Ask func(End) bool
}

// Merges reports whether a job that succeeded, whose work is at end,
// merges its branch: asked for, or answered yes.
func (e Ending) Merges(end End) bool {
	return e.Merge || e.Ask != nil && e.Ask(end)
}

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

// MergeEnd merges the job branch into target at the end of a job that
// succeeded, and says how: with block, when the file has a merge: block
// (its steps run in the job worktree with ${merge.*}, vars); else
// runner's own merge, in the user's checkout. It waits, saying so on w,
// while another final merge into the repository runs.
func (t *Tree) MergeEnd(ctx context.Context, target string, w io.Writer, block func(ctx context.Context, vars map[string]any) error) (string, error) {
	how, err := t.finalMerge(ctx, target, w, block)
	if err != nil {
		if target == "" {
			target = "your branch"
		}
		return "", &MergeError{Branch: t.JobBranch, Target: target, Err: err}
	}
	return how, nil
}

// finalMerge is MergeEnd's work, under the lock that has final merges
// into the repository's checkouts take turns.
func (t *Tree) finalMerge(ctx context.Context, target string, w io.Writer, block func(ctx context.Context, vars map[string]any) error) (string, error) {
	if target == "" {
		return "", errors.New("HEAD was detached when the job started, so there is no branch to merge into")
	}
	unlock, err := t.lockCheckout(ctx, w)
	if err != nil {
		return "", err
	}
	defer unlock()
	if block == nil {
		return MergedByGit, t.mergeInto(ctx, target)
	}
	vars, err := t.mergeVars(ctx, target)
	if err != nil {
		return "", fmt.Errorf("the merge block's variables: %w", err)
	}
	return MergedByBlock, block(ctx, vars)
}

// mergeInto merges the job branch into target in the user's checkout, with
// a merge commit, if that checkout is still on target, in the middle of
// no git operation and without changes to tracked files: runner never
// merges into a branch the user left, nor mixes its merge with their
// work. A conflict aborts the merge, leaving the checkout as it was. A
// job branch that target has already (merged by a runner killed before
// it recorded so) counts as merged. The checkout lock is held, and what
// a runner killed during its merge left is undone (lockCheckout).
func (t *Tree) mergeInto(ctx context.Context, target string) error {
	ctx = context.WithoutCancel(ctx) // a merge is not left half done
	user := t.User
	tip, err := t.jobTip(ctx)
	if err != nil {
		return err
	}
	if merged, err := user.Contains(ctx, target, tip); err != nil || merged {
		return err
	}
	if err := checkCheckout(ctx, user, target); err != nil {
		return err
	}
	conflicts, err := user.Merge(ctx, t.JobBranch, t.mergeMessage())
	if err != nil {
		return err
	}
	if len(conflicts) > 0 {
		return fmt.Errorf("the merge conflicts in %s; it was aborted, and your checkout is as it was", strings.Join(conflicts, ", "))
	}
	return nil
}

// mergeMessage is the message of runner's merge commit of the job branch.
func (t *Tree) mergeMessage() string { return mergeMessage(t.JobBranch, t.JobID) }

// checkCheckout refuses a user's checkout that is not on target, is in the
// middle of a git operation (the user's merge, rebase, cherry-pick,
// revert or bisect) or has changes to tracked files, saying which.
func checkCheckout(ctx context.Context, user gitwork.Git, target string) error {
	busy, err := user.InProgress(ctx)
	switch {
	case err != nil:
		return err
	case busy != "":
		return fmt.Errorf("your checkout is in the middle of %s", busy)
	}
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
	if err != nil || len(changed) == 0 {
		return err
	}
	return fmt.Errorf("your checkout has changes not committed (%s); commit or put them aside first", gitwork.Names(changed))
}
