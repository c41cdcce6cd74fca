package workspace

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/runnerdev/runner/internal/proc"
	"github.com/runnerdev/runner/internal/state"
	"github.com/runnerdev/runner/internal/testkit"
)

// testRepo makes a new git repository with one commit (f.txt) on main,
// this process's directory, and returns a function that runs git in a
// directory.
func testRepo(t *testing.T) (git func(dir string, args ...string) string, repo string) {
	r := testkit.GitCheckout(t, map[string]string{"f.txt": "base\n"})
	return r.In, r.Dir
}

// The job's merge lock is a flock that another process (another open
// file) cannot take while this one holds it, and can once it is given
// back.
func TestLock(t *testing.T) {
	testRepo(t)
	dir := t.TempDir()
	tree, err := Open(t.Context(), JobRefs{ID: "j"}, nil, state.LayoutOf(dir))
	if err != nil {
		t.Fatal(err)
	}
	unlock, err := tree.Lock(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	other, err := os.Open(tree.lockPath)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if err := syscall.Flock(int(other.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); !errors.Is(err, syscall.EWOULDBLOCK) {
		t.Errorf("another holder took the held lock: %v", err)
	}
	unlock()
	if err := syscall.Flock(int(other.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		t.Errorf("the lock given back cannot be taken: %v", err)
	}
}

// Ready makes the job worktree again whatever a process killed while git
// made or removed it left (issue 23.2): a worktree still registered and
// locked with its directory gone, which git worktree prune keeps; one
// half made (locked, its checkout unfinished); no .git/worktrees at all.
func TestReadyAfterKilledGit(t *testing.T) {
	git, repo := testRepo(t)
	open := func() *Tree {
		tree, err := Open(t.Context(), JobRefs{ID: "j"}, nil, state.LayoutOf(filepath.Join(repo, ".state")))
		if err != nil {
			t.Fatal(err)
		}
		return tree
	}
	tree := open()
	if err := tree.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	admin := git(tree.Root, "rev-parse", "--absolute-git-dir")
	lock := func() {
		if err := os.WriteFile(filepath.Join(admin, "locked"), []byte("initializing"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	ready := func(what string) {
		t.Helper()
		// Another process's: it has not checked the worktree yet.
		if err := open().Ready(t.Context()); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if st := git(tree.Root, "status", "--porcelain"); st != "" {
			t.Errorf("%s: the job worktree is not clean: %q", what, st)
		}
		if b := git(tree.Root, "symbolic-ref", "--short", "HEAD"); b != "runner/j" {
			t.Errorf("%s: the job worktree is on %q", what, b)
		}
		if list := git(repo, "worktree", "list", "--porcelain"); strings.Count(list, "worktree ") != 2 || strings.Contains(list, "locked") {
			t.Errorf("%s: worktrees:\n%s", what, list)
		}
	}
	lock()
	if err := os.RemoveAll(tree.Root); err != nil {
		t.Fatal(err)
	}
	ready("locked, its directory gone")

	admin = git(tree.Root, "rev-parse", "--absolute-git-dir")
	lock()
	if err := os.Remove(filepath.Join(tree.Root, "f.txt")); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(admin, "index")); err != nil {
		t.Fatal(err)
	}
	ready("half made")

	if err := tree.Remove(t.Context()); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(repo, ".git", "worktrees")); !os.IsNotExist(err) {
		t.Fatalf(".git/worktrees is still there: %v", err)
	}
	ready("no .git/worktrees")
}

// A process that died holding the job's merge lock, maybe in a merge,
// left its pid in the lock file: whoever takes the lock next has Ready
// undo what that merge left in the job worktree, even when this process
// had readied it already.
func TestLockAfterADeadHolder(t *testing.T) {
	testRepo(t)
	dir := t.TempDir()
	tree, err := Open(t.Context(), JobRefs{ID: "j"}, nil, state.LayoutOf(dir))
	if err != nil {
		t.Fatal(err)
	}
	if err := tree.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	// A merge killed in its pre-merge-commit hook: its result staged.
	os.WriteFile(filepath.Join(tree.Root, "merged.txt"), []byte("m\n"), 0o600)
	if out, err := exec.Command("git", "-C", tree.Root, "add", "merged.txt").CombinedOutput(); err != nil {
		t.Fatalf("git add: %v\n%s", err, out)
	}
	os.WriteFile(tree.lockPath, []byte("999999-1"), 0o600)
	unlock, err := tree.Lock(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	err = tree.Ready(t.Context())
	unlock()
	if err != nil {
		t.Fatal(err)
	}
	if paths, _ := tree.Git.ChangedPaths(t.Context()); len(paths) > 0 {
		t.Errorf("the job worktree keeps the dead holder's half merge: %q", paths)
	}
	if data, _ := os.ReadFile(tree.lockPath); len(data) != 0 {
		t.Errorf("the lock file given back holds %q", data)
	}
}

// A git that a runner process started and that died deleting a branch
// (SIGTERM, its parent-death signal, is enough) can leave packed-refs.lock
// and packed-refs.new, and every later branch deletion in the repository
// fails on them. Opening the job again ends that process's leftovers and
// removes the ref lock files made since it started; older ones (not its)
// stay.
func TestOpenRemovesADeadProcesssRefLocks(t *testing.T) {
	git, repo := testRepo(t)
	git(repo, "branch", "runner-items/j/1")
	common := filepath.Join(repo, ".git")
	old := filepath.Join(common, "refs", "heads", "someone-elses.lock")
	os.WriteFile(old, nil, 0o600)
	an := time.Now().Add(-time.Hour)
	os.Chtimes(old, an, an)

	dir := t.TempDir()
	layout := state.LayoutOf(dir)
	// The record of a git (here: a process of this test's, ended) whose
	// runner process (one that ran and exited) died while it ran.
	dead := exec.Command("sleep", "0.05")
	if err := dead.Start(); err != nil {
		t.Fatal(err)
	}
	start, ok := proc.StartTime(dead.Process.Pid)
	if !ok {
		t.Skip("process start times are not known here")
	}
	time.Sleep(10 * time.Millisecond) // the lock files are made after the process started
	left := []string{filepath.Join(common, "packed-refs.lock"), filepath.Join(common, "packed-refs.new"), filepath.Join(common, "refs", "heads", "runner-items", "j", "1.lock")}
	for _, lock := range left {
		if err := os.WriteFile(lock, nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	dead.Wait()
	os.MkdirAll(layout.GitProcesses, 0o700)
	record := fmt.Sprintf("%d-%d.%d-%d", dead.Process.Pid, start, dead.Process.Pid, start)
	os.WriteFile(filepath.Join(layout.GitProcesses, record), nil, 0o600)

	if out, err := exec.Command("git", "branch", "-D", "runner-items/j/1").CombinedOutput(); err == nil {
		t.Fatalf("git branch -D succeeds with the lock files there (%s): the test shows nothing", out)
	}
	if _, err := Open(t.Context(), JobRefs{ID: "j"}, nil, layout); err != nil {
		t.Fatal(err)
	}
	for _, lock := range left {
		if _, err := os.Lstat(lock); err == nil {
			t.Errorf("%s is left", lock)
		}
	}
	if _, err := os.Lstat(old); err != nil {
		t.Errorf("a lock file older than the dead process was removed: %v", err)
	}
	git(repo, "branch", "-D", "runner-items/j/1")
}
