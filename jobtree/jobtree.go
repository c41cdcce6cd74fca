// Package jobtree is a job's git worktree on a branch of its own, where
// its phases run: made from the user's HEAD when the job starts, made
// again on resume, removed when it ends, and its branch merged into the
// one the job started on.
package jobtree

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"

	"github.com/runnerdev/runner/gitwork"
	"github.com/runnerdev/runner/job"
)

// Tree is the worktree of a job on its job branch: a MapReduce job whose
// map runs with isolation: worktree (setup, the items' merges and reduce
// run in it), or a standard workflow with a merge: block or merge_back:
// true (its commands run in it).
type Tree struct {
	// JobBranch is the job's branch, runner/<job id>.
	JobBranch string
	JobID     string
	// Git runs git in the job worktree, with the job's environment;
	// Git.In("") runs it in the user's checkout.
	Git gitwork.Git
	// Root is the job worktree's directory.
	Root string
	// Prefix is the directory runner was started in, below the
	// repository's top: phases run there in each worktree.
	Prefix string
	// lockPath is the file whose flock orders the merges into the job
	// branch of all the processes of a job (two dlq retries may run at
	// once).
	lockPath string

	mergeMu sync.Mutex // one merge into the job branch at a time
	// checked is set once this process has aborted any merge a dead
	// process left half done in the job worktree.
	checked bool
}

// Open returns the worktree of a job, for the job's process and for the
// processes that run its items: path is the job's Path and env its
// environment. The repository is the one this process's directory is in.
//
// Before anything reads the repository, it ends what the git commands of
// the job's processes that died left running (their hooks, which may
// still write to it; git itself died with its runner).
func Open(ctx context.Context, jobID string, env []string, path func(string) string) (*Tree, error) {
	groups := &gitwork.Groups{Dir: path("git-processes")}
	if err := groups.EndLeftovers(); err != nil {
		return nil, err
	}
	_, prefix, err := gitwork.Git{Env: env}.TopLevel(ctx)
	if err != nil {
		return nil, err
	}
	root, err := filepath.Abs(path("worktree"))
	if err != nil {
		return nil, err
	}
	return &Tree{
		JobBranch: "runner/" + jobID,
		JobID:     jobID,
		Git:       gitwork.Git{Dir: root, Env: env, Groups: groups},
		Root:      root,
		Prefix:    prefix,
		lockPath:  filepath.Join(filepath.Dir(root), "worktree.lock"),
	}, nil
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

// Begin readies the worktree of a started job (Start) or of a resumed one
// (resume: Ready, and what else the job left to clean), has the job's
// phases run in it, and returns the job's branch and the branch it merges
// into. The caller removes the worktree when the job ends, even after an
// error.
func (t *Tree) Begin(ctx context.Context, j *job.Job, resume func(context.Context) error) (End, error) {
	start := t.Start
	if j.Resumed() {
		start = resume
	}
	if err := start(ctx); err != nil {
		return End{}, err
	}
	j.SetDir(t.Dir())
	return End{Branch: t.JobBranch, Target: target(j)}, nil
}

// Start makes the job worktree on a new job branch from the HEAD of the
// checkout runner runs in, which stays as it is.
func (t *Tree) Start(ctx context.Context) error {
	user := t.Git.In("")
	head, err := user.Head(ctx)
	if err != nil {
		return err
	}
	if head == "" {
		return errors.New("the job's worktree: the repository has no commit yet; make one first: git commit --allow-empty -m init")
	}
	if err := user.NewWorktree(ctx, t.Root, t.JobBranch, head); err != nil {
		return fmt.Errorf("the job worktree: %w", err)
	}
	t.checked = true // new: no merge in it to abort
	return nil
}

// Ready makes the job worktree on the job branch when it is not there (a
// resumed job whose process died; a dlq retry runs after the job ended,
// and a retry that ends removes it while another may still merge), and
// undoes a merge that a process which died left half done in it: the
// lock files of a git that died holding them, the merge in progress
// (MERGE_HEAD), or its result staged with no MERGE_HEAD, as git leaves it
// when killed in a pre-merge-commit hook (the worktree is runner's, and
// what a killed step staged there goes too: the step runs again from the
// start). The job's merge lock is held (Lock), or no other process runs
// the job, and the git commands of the processes that died are ended.
func (t *Tree) Ready(ctx context.Context) error {
	if _, err := os.Stat(filepath.Join(t.Root, ".git")); err == nil {
		if t.checked {
			return nil
		}
		t.checked = true
		if err := t.Git.RemoveLocks(ctx, t.JobBranch); err != nil {
			return err
		}
		return errors.Join(t.Git.AbortMerge(ctx), t.Git.UndoMerge(ctx))
	}
	user := t.Git.In("")
	// What a process killed while it removed the worktree left of it.
	if err := errors.Join(os.RemoveAll(t.Root), user.Prune(ctx)); err != nil {
		return err
	}
	if tip, err := user.Tip(ctx, t.JobBranch); err != nil || tip == "" {
		return errors.Join(err, fmt.Errorf("the job branch %s is gone: the job's work cannot be resumed", t.JobBranch))
	}
	if err := user.AddWorktree(ctx, t.Root, t.JobBranch); err != nil {
		return fmt.Errorf("the job worktree: %w", err)
	}
	t.checked = true
	return nil
}

// Lock takes the job's merge lock: this process's, then the flock that
// other processes of the job (dlq retries) take. unlock gives both back.
// The holder writes itself (gitwork.Self) in the lock file and empties it
// when it lets go: one found there is a process that died holding the lock,
// maybe in a merge, and what its git left is ended and undone (Ready
// checks the job worktree again), whenever this process opened the job.
func (t *Tree) Lock() (unlock func(), err error) {
	t.mergeMu.Lock()
	f, err := os.OpenFile(t.lockPath, os.O_RDWR|os.O_CREATE, 0o600)
	if err == nil {
		if err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
			f.Close()
		}
	}
	if err == nil {
		if err = t.takeLock(f); err != nil {
			f.Close() // the flock goes with it
		}
	}
	if err != nil {
		t.mergeMu.Unlock()
		return nil, fmt.Errorf("the job's merge lock: %w", err)
	}
	return func() {
		_ = f.Truncate(0)
		// Unlocked before the close: a child forked meanwhile holds a
		// copy of the descriptor until it execs, and the close alone
		// would leave the flock to it.
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
		t.mergeMu.Unlock()
	}, nil
}

// takeLock ends what a holder of the job's merge lock f that died left,
// and writes this process in its place.
func (t *Tree) takeLock(f *os.File) error {
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if fi.Size() > 0 {
		dead := make([]byte, fi.Size())
		if _, err := f.ReadAt(dead, 0); err != nil {
			return err
		}
		gitwork.AwaitExit(string(dead))
		if err := t.Git.Groups.EndLeftovers(); err != nil {
			return err
		}
		t.checked = false
		if err := f.Truncate(0); err != nil {
			return err
		}
	}
	_, err = f.WriteAt([]byte(gitwork.Self), 0)
	return err
}

// Remove removes the job worktree (the branch stays), even when ctx is
// done: an interrupted job still cleans up.
func (t *Tree) Remove(ctx context.Context) error {
	ctx = context.WithoutCancel(ctx)
	user := t.Git.In("")
	return errors.Join(user.RemoveWorktree(ctx, t.Root), user.Prune(ctx))
}
