package workspace

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The job branch's tip is read once for all the items dispatched until
// this process moves the job branch (it lets go of the merge lock, under
// which a merge is made), and read again then.
func TestTipReadOnceBetweenMoves(t *testing.T) {
	w, git, repo := testWorktrees(t)
	git(repo, "branch", "runner/j")
	reads := countTipReads(t, w)
	tipIs := func(want string) {
		t.Helper()
		if tip, err := w.Tip(t.Context()); err != nil || tip != want {
			t.Fatalf("tip = %s, %v; want %s", tip, err, want)
		}
	}
	for range 5 {
		tipIs(git(repo, "rev-parse", "runner/j"))
	}
	if n := reads(); n != 1 {
		t.Fatalf("the tip was read %d times for 5 items, want once", n)
	}
	next := git(repo, "commit-tree", "-m", "next", "-p", "runner/j", "runner/j^{tree}")
	git(repo, "update-ref", "refs/heads/runner/j", next)
	unlock, err := w.Lock(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	unlock()
	for range 5 {
		tipIs(next)
	}
	if n := reads(); n != 2 {
		t.Fatalf("the tip was read %d times in all, want twice: once more after the move", n)
	}
}

// countTipReads makes w's git log the commands it runs, and returns how
// many of those so far read a tip (rev-parse).
func countTipReads(t *testing.T, w *Worktrees) func() int {
	t.Helper()
	real, err := exec.LookPath("git")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	log := filepath.Join(dir, "log")
	script := "#!/bin/sh\necho \"$1\" >>'" + log + "'\nexec '" + real + "' \"$@\"\n"
	if err := os.WriteFile(filepath.Join(dir, "git"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	w.User.Env = append(slices.Clip(w.User.Env), "PATH="+dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	return func() int {
		data, _ := os.ReadFile(log)
		return strings.Count(string(data), "rev-parse\n")
	}
}

// A worker's repository is a clone of the one it runs in that shares its
// objects, made once per directory: a job copy opened again keeps it.
func TestWorkerRepo(t *testing.T) {
	_, git, repo := testWorktrees(t)
	dir := filepath.Join(t.TempDir(), "git")
	for range 2 {
		if err := WorkerRepo(t.Context(), dir, os.Environ()); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := git(dir, "rev-parse", "HEAD"), git(repo, "rev-parse", "HEAD"); got != want {
		t.Errorf("the clone's HEAD is %s, want the repository's %s", got, want)
	}
	if alt, err := os.ReadFile(filepath.Join(dir, ".git", "objects", "info", "alternates")); err != nil || !strings.Contains(string(alt), repo) {
		t.Errorf("the clone's alternates: %q, %v; want the repository's objects", alt, err)
	}
}
