package workspace

import (
	"context"
	"fmt"

	"github.com/runnerdev/runner/internal/crashpoint"
	"github.com/runnerdev/runner/internal/gitwork"
	"github.com/runnerdev/runner/internal/state"
)

// Leftovers are what a job has in its repository: the worktrees under
// its state directory (the job worktree, the items' worktrees) and its
// branches.
type Leftovers struct {
	Worktrees []string
	Branches  []LeftBranch
}

// LeftBranch is one branch of a job's.
type LeftBranch struct {
	Name string
	// Unmerged counts the commits of the branch that no branch but the
	// job's own has: those that deleting the job's branches would lose.
	Unmerged int
}

// Unmerged returns the branches of l that hold commits no other branch
// has.
func (l Leftovers) Unmerged() []LeftBranch {
	var out []LeftBranch
	for _, b := range l.Branches {
		if b.Unmerged > 0 {
			out = append(out, b)
		}
	}
	return out
}

// Survey returns the leftovers of a job in the repository runner runs in:
// the worktrees under dir, its state directory, and the branches under
// names (its job branch, the directory of its item branches). A
// directory outside a git work tree is ErrNotWorkTree.
func Survey(ctx context.Context, dir string, names ...string) (Leftovers, error) {
	var (
		l    Leftovers
		repo gitwork.Git
	)
	trees, err := repo.Worktrees(ctx, dir)
	if err != nil {
		return l, err
	}
	for _, t := range trees {
		l.Worktrees = append(l.Worktrees, t.Path)
	}
	branches, err := repo.BranchesUnder(ctx, names...)
	if err != nil {
		return l, err
	}
	for _, b := range branches {
		n, err := repo.OnlyOn(ctx, b, branches)
		if err != nil {
			return l, fmt.Errorf("branch %s: %w", b, err)
		}
		l.Branches = append(l.Branches, LeftBranch{Name: b, Unmerged: n})
	}
	return l, nil
}

// Clear removes l, the leftovers of the job whose directory (or
// tombstone) is layout, from the repository runner runs in, its git
// commands recorded in the job's (EndJobLeftovers), holding the
// repository's worktree lock (see Tree.Admin; git deleting the last
// branch of a directory races with a git making one there): its
// worktrees, then its branches, whatever they hold. removed is told of
// each one gone ("worktree PATH", "branch NAME"). It stops at the first
// failure.
//
// The worktrees' directories are gone, moved away with the job's
// directory (state.Job.Bury): git forgets them. Before the branches go, git
// forgets every worktree whose directory is gone: a record that a git
// killed in its removal left half made, which git no longer lists,
// would keep the branch it had checked out.
func Clear(ctx context.Context, layout state.Layout, l Leftovers, removed func(what string)) error {
	if len(l.Worktrees) == 0 && len(l.Branches) == 0 {
		return nil
	}
	repo := gitwork.Git{Groups: &gitwork.Groups{Dir: layout.GitProcesses}}
	common, err := repo.CommonDir(ctx)
	if err != nil {
		return err
	}
	return admin(adminLockPath(common), func() error {
		for _, p := range l.Worktrees {
			if err := repo.ForgetWorktree(ctx, p); err != nil {
				return fmt.Errorf("removing worktree %s: %w", p, err)
			}
			crashpoint.Hit(crashpoint.RemovedWorktree)
			removed("worktree " + p)
		}
		if err := repo.Prune(ctx); err != nil {
			return err
		}
		for _, b := range l.Branches {
			if err := repo.DeleteBranch(ctx, b.Name); err != nil {
				return fmt.Errorf("deleting branch %s: %w", b.Name, err)
			}
			crashpoint.Hit(crashpoint.RemovedBranch)
			removed("branch " + b.Name)
		}
		return nil
	})
}

// EndJobLeftovers ends what the git commands of the processes of the job
// whose directory (or tombstone) is layout left when they died, in the
// repository runner runs in (gitwork.Groups.EndLeftovers).
func EndJobLeftovers(ctx context.Context, layout state.Layout) error {
	return (&gitwork.Groups{Dir: layout.GitProcesses}).EndLeftovers(ctx, gitwork.Git{})
}

// BranchesInTheWay returns the branches of the repository runner runs in
// that are in the way of names, branches a new job would make: names
// themselves, or the directories above them or below.
func BranchesInTheWay(ctx context.Context, names ...string) ([]string, error) {
	return gitwork.Git{}.BranchesInTheWay(ctx, names...)
}

// JobBranches are the branches of a job that ran on a job branch, as the
// repository runner runs in has them now.
type JobBranches struct {
	Gone   bool     // the job branch is gone
	Merged bool     // the branch the job started on holds the job branch
	Items  []string // the items' branches
}

// Branches returns the branches of the job of r as the repository runner
// runs in has them now.
func (r JobRefs) Branches(ctx context.Context) (JobBranches, error) {
	var repo gitwork.Git
	tip, err := repo.Tip(ctx, Branch(r.ID))
	b := JobBranches{Gone: tip == ""}
	if err == nil && tip != "" && r.Target != "" {
		b.Merged, err = repo.Contains(ctx, r.Target, tip)
	}
	if err == nil {
		b.Items, err = repo.BranchesUnder(ctx, r.ItemPrefix())
	}
	return b, err
}
