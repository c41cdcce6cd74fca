package workspace

import (
	"context"

	"github.com/runnerdev/runner/internal/gitwork"
)

// What cmd reads of the checkout runner runs in before a job starts.

// InWorkTree reports whether runner runs in a git work tree.
func InWorkTree(ctx context.Context) bool {
	_, _, err := gitwork.Git{}.TopLevel(ctx)
	return err == nil
}

// ErrNotWorkTree is StartPoint's error, in git's words, when git cannot
// say where the work tree runner runs in is (outside one).
var ErrNotWorkTree = gitwork.ErrNotRepository

// StartPoint returns what a new job's worktree starts from: the HEAD of
// the checkout runner runs in ("" before its first commit;
// ErrNotWorkTree outside a git work tree), and the paths of its
// changes not committed, which the job does not have.
func StartPoint(ctx context.Context) (head string, dirty []string, err error) {
	var git gitwork.Git
	if _, _, err := git.TopLevel(ctx); err != nil {
		return "", nil, err
	}
	if head, err = git.Head(ctx); err != nil || head == "" {
		return head, nil, err
	}
	dirty, err = git.DirtyPaths(ctx)
	return head, dirty, err
}

// CurrentBranch is the branch checked out where runner runs, which a job
// branch merges into: "" when HEAD is detached.
func CurrentBranch(ctx context.Context) (string, error) { return gitwork.Git{}.Branch(ctx) }

// CheckBranchName fails when git cannot use name as a branch's name.
func CheckBranchName(ctx context.Context, name string) error {
	return gitwork.Git{}.CheckBranchName(ctx, name)
}

// Names lists the first few of paths for a message, saying how many more
// there are.
func Names(paths []string) string { return gitwork.Names(paths) }
