// Package workspace owns what runner makes in git: the job's worktree on
// a branch of its own, where its phases run (made from the user's HEAD
// when the job starts, made again on resume, removed when it ends, and its
// branch merged into the one the job started on), each item's worktree on
// a branch of the job branch (Worktrees, map.isolation: worktree), merged
// back into it when the item succeeds, the bundles that carry branches to
// and from NATS workers, and what a removed job leaves (Survey, Clear);
// gitwork, beneath it, runs the git commands.
package workspace

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/runnerdev/runner/internal/crashpoint"
	"github.com/runnerdev/runner/internal/gitwork"
	"github.com/runnerdev/runner/internal/state"
)

// Tree is the worktree of a job on its job branch: a MapReduce job whose
// map runs with isolation: worktree (setup, the items' merges and reduce
// run in it), or a standard workflow that runs in a worktree (a claude:
// step, commit_required, merge:, merge_back: true; its commands run in
// it).
type Tree struct {
	// JobBranch is the job's branch, runner/<job id>.
	JobBranch string
	JobID     string
	// Git runs git in the job worktree, with the job's environment;
	// User runs it in the user's checkout (a NATS worker's clone).
	Git, User gitwork.Git
	// Root is the job worktree's directory.
	Root string
	// Prefix is the directory runner was started in, below the
	// repository's top: phases run there in each worktree.
	Prefix string
	// lockPath is the file whose flock orders the merges into the job
	// branch of all the processes of a job (two dlq retries may run at
	// once).
	lockPath string
	// adminLockPath is the file whose flock orders the git worktree
	// commands (Admin) of all runner's processes in the repository.
	adminLockPath string

	mergeMu sync.Mutex // one merge into the job branch at a time
	// moves counts the times this process let go of the merge lock,
	// under which all its changes of the job branch are made while the
	// items run (JobBranchMoves).
	moves atomic.Uint64
	// checked is set once this process has aborted any merge a dead
	// process left half done in the job worktree.
	checked bool
}

// Open returns the worktree of a job, for the job's process and for the
// processes that run its items: layout is the job's directory and env
// its environment. The repository is refs.Repo's, by default the one this
// process's directory is in.
//
// Before anything reads the repository, it ends what the git commands of
// the job's processes that died left running (their hooks, which may
// still write to it; git itself died with its runner).
func Open(ctx context.Context, refs JobRefs, env []string, layout state.Layout) (*Tree, error) {
	groups := &gitwork.Groups{Dir: layout.GitProcesses}
	git := gitwork.Git{Dir: refs.Repo, Env: env}
	if err := groups.EndLeftovers(ctx, git); err != nil {
		return nil, err
	}
	// Runner's directory in the repository it is in: in a clone of it
	// (a NATS worker's, repo), the same place.
	_, prefix, err := gitwork.Git{Env: env}.TopLevel(ctx)
	if refs.Repo != "" && errors.Is(err, gitwork.ErrNotRepository) {
		err = nil // a NATS worker's repository, made empty: its top
	}
	if err != nil {
		return nil, err
	}
	common, err := git.CommonDir(ctx)
	if err != nil {
		return nil, err
	}
	root, err := filepath.Abs(layout.Worktree)
	if err != nil {
		return nil, err
	}
	return &Tree{
		JobBranch:     Branch(refs.ID),
		JobID:         refs.ID,
		Git:           gitwork.Git{Dir: root, Env: env, Groups: groups},
		User:          gitwork.Git{Dir: refs.Repo, Env: env, Groups: groups},
		Root:          root,
		Prefix:        prefix,
		lockPath:      layout.WorktreeLock,
		adminLockPath: adminLockPath(common),
	}, nil
}

// Branch is the job branch of job id: runner/<id>.
func Branch(id string) string { return "runner/" + id }

// jobTip returns the job branch's tip; a job branch that is gone is an
// error.
func (t *Tree) jobTip(ctx context.Context) (string, error) {
	tip, err := t.User.Tip(ctx, t.JobBranch)
	if err == nil && tip == "" {
		err = fmt.Errorf("the job branch %s is gone", t.JobBranch)
	}
	return tip, err
}

// Dir is where the job's phases run: runner's directory in the job
// worktree.
func (t *Tree) Dir() string { return filepath.Join(t.Root, t.Prefix) }

// End is where a job's work is when the job ends.
type End struct {
	// Branch is the job branch, which holds the commits of the job's
	// phases.
	Branch string
	// Target is the branch the job started on, which the job branch
	// merges into ("" when HEAD was detached).
	Target string
	// Merged says how the job branch was merged into Target
	// (MergedByGit, MergedByBlock); "" when it was not.
	Merged string
}

// Begin readies the worktree of a started job (Start) or of a resumed
// one (resume: Ready, and what else the job left to clean), and returns
// the job's branch and target, the branch it merges into. The caller runs
// the job's phases in Dir and removes the worktree when the job ends,
// even after an error.
func (t *Tree) Begin(ctx context.Context, resumed bool, target string, resume func(context.Context) error) (End, error) {
	start := t.Start
	if resumed {
		start = resume
	}
	if err := start(ctx); err != nil {
		return End{}, err
	}
	return End{Branch: t.JobBranch, Target: target}, nil
}

// Start makes the job worktree on a new job branch from the HEAD of the
// checkout runner runs in, which stays as it is.
func (t *Tree) Start(ctx context.Context) error {
	head, err := t.User.Head(ctx)
	if err != nil {
		return err
	}
	if head == "" {
		return errors.New("the job's worktree: the repository has no commit yet; make one first: git commit --allow-empty -m init")
	}
	err = t.Admin(func() error { return t.User.NewWorktree(ctx, t.Root, t.JobBranch, head) })
	if err != nil {
		return fmt.Errorf("the job worktree: %w", err)
	}
	crashpoint.Hit(crashpoint.JobWorktreeAdded)
	t.checked = true // new: no merge in it to abort
	return nil
}

// Ready makes the job worktree on the job branch when it is not there (a
// resumed job whose process died; a dlq retry runs after the job ended,
// and a retry that ends removes it while another may still merge) or is
// half made (a process killed while git made it), and undoes a merge that
// a process which died left half done in it (undoMerge). The job's merge
// lock is held (Lock), or no other process runs the job, and the git
// commands of the processes that died are ended.
func (t *Tree) Ready(ctx context.Context) error {
	if _, err := os.Stat(filepath.Join(t.Root, ".git")); err == nil && t.checked {
		return nil
	}
	whole, err := t.undoMerge(ctx, time.Time{})
	if err != nil || whole {
		return err
	}
	if err := t.Admin(func() error { return t.remake(ctx) }); err != nil {
		return err
	}
	t.checked = true
	return nil
}

// undoMerge undoes, in the job worktree when it is there whole (intact),
// a merge that a process which died left half done: the lock files of a
// git that died holding them, the merge in progress (MERGE_HEAD), or its
// result staged with no MERGE_HEAD, as git leaves it when killed in a
// pre-merge-commit hook (the worktree is runner's, and what a killed step
// staged there goes too: the step runs again from the start). With since,
// when a holder of the merge lock that died took it, the files its git
// wrote from then on and the index does not have go too, whole or cut
// short (gitwork.RestoreWrittenSince): no one else writes the job worktree
// while the lock is held. It reports whether the job worktree was there
// whole; if not, Ready makes it again.
func (t *Tree) undoMerge(ctx context.Context, since time.Time) (whole bool, err error) {
	if _, err := os.Stat(filepath.Join(t.Root, ".git")); err != nil {
		return false, nil
	}
	if err := t.Admin(func() (err error) { whole, err = t.intact(ctx); return err }); err != nil || !whole {
		return false, err
	}
	t.checked = true
	if err := t.Git.RemoveLocks(ctx, t.JobBranch); err != nil {
		return true, err
	}
	if err := errors.Join(t.Git.AbortMerge(ctx), t.Git.UndoMerge(ctx)); err != nil || since.IsZero() {
		return true, err
	}
	return true, t.Git.RestoreWrittenSince(ctx, since)
}

// intact reports whether the job worktree that is there is whole: git has
// it, not locked (a process was killed while git made it: its checkout
// may be half done).
func (t *Tree) intact(ctx context.Context) (bool, error) {
	there, err := t.User.Worktrees(ctx, t.Root)
	return len(there) == 1 && !there[0].Locked, err
}

// remake makes the job worktree on the job branch again, clearing what a
// process killed while it made or removed it left (MakeWorktree).
func (t *Tree) remake(ctx context.Context) error {
	if _, err := t.jobTip(ctx); err != nil {
		return fmt.Errorf("%w: the job's work cannot be resumed", err)
	}
	user := t.User
	err := user.MakeWorktree(ctx, t.Root, func() error { return user.AddWorktree(ctx, t.Root, t.JobBranch) })
	if err != nil {
		return fmt.Errorf("the job worktree: %w", err)
	}
	return nil
}

// Lock takes the job's merge lock: this process's, then the flock that
// other processes of the job (dlq retries) take; unlock gives both back.
// Its record is the holder's gitwork.Self (hold): what a holder that died
// left, maybe in a merge, is ended and undone (undoMerge, with the files
// its git wrote; a job worktree not there whole is made again by the next
// Ready), whenever this process opened the job.
func (t *Tree) Lock(ctx context.Context) (unlock func(), err error) {
	t.mergeMu.Lock()
	self := func() ([]byte, error) { return []byte(gitwork.Self()), nil }
	release, err := hold(t.lockPath, nil, self, func(dead []byte, since time.Time) error {
		gitwork.AwaitExit(string(dead))
		if err := t.Git.Groups.EndLeftovers(ctx, t.User); err != nil {
			return err
		}
		t.checked = false
		_, err := t.undoMerge(ctx, since)
		return err
	})
	if err != nil {
		t.mergeMu.Unlock()
		return nil, fmt.Errorf("the job's merge lock: %w", err)
	}
	return func() {
		t.moves.Add(1)
		release()
		t.mergeMu.Unlock()
	}, nil
}

// JobBranchMoves counts the times this process may have moved the job
// branch while its items ran: each time it let go of the merge lock, which
// a merge into the job branch (and the undoing of a half-done one) holds.
// While it stays the same, the job branch's tip read before is still its
// tip: no other process moves it while the items run (a dlq retry refuses
// to start while the job runs, and holds the DLQ while it runs).
func (t *Tree) JobBranchMoves() uint64 { return t.moves.Load() }

// Admin runs fn, which runs git worktree commands (add, remove, prune,
// list), holding the repository's worktree lock (runner-worktrees.lock in
// its git directory): those of all runner's processes in the repository,
// of one job or of several, take turns. Two at once race in git itself,
// on the directory .git/worktrees and the files in it ("failed to read
// .git/worktrees/N/commondir", "could not create directory of
// '.git/worktrees/...'"). fn must not call Admin.
func (t *Tree) Admin(fn func() error) error { return admin(t.adminLockPath, fn) }

// adminLockPath is the file whose flock Admin takes in the repository
// whose git directory is common.
func adminLockPath(common string) string { return filepath.Join(common, "runner-worktrees.lock") }

// Remove removes the job worktree (the branch stays), even when ctx is
// done: an interrupted job still cleans up.
func (t *Tree) Remove(ctx context.Context) error {
	ctx = context.WithoutCancel(ctx)
	return t.Admin(func() error { return errors.Join(t.User.RemoveWorktree(ctx, t.Root), t.User.Prune(ctx)) })
}
