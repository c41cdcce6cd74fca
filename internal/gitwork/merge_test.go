package gitwork

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/runnerdev/runner/internal/proc"
	"github.com/runnerdev/runner/internal/testkit"
)

// conflicted leaves g in the middle of a merge of a branch "theirs" that
// conflicts with main in base.txt, as a user's git merge leaves it.
func conflicted(t *testing.T, g Git) {
	t.Helper()
	must(t, g, "checkout", "-q", "-b", "theirs")
	commitFile(t, g, "base.txt", "theirs\n", "theirs")
	must(t, g, "checkout", "-q", "main")
	commitFile(t, g, "base.txt", "ours\n", "ours")
	if res := g.Run(t.Context(), "merge", "-m", "the user's own merge", "theirs"); res.Kind == proc.KindOK {
		t.Fatal("the user's merge did not conflict")
	}
}

// job makes a branch "job" with a file of its own, which merges cleanly.
func job(t *testing.T, g Git) {
	t.Helper()
	must(t, g, "branch", "job", "main")
	wt := filepath.Join(t.TempDir(), "job")
	must(t, g, "worktree", "add", "-q", wt, "job")
	commitFile(t, g.In(wt), "job.txt", "job\n", "job work")
}

// Merge never aborts a merge it did not start: a user's merge in progress
// keeps its MERGE_HEAD and MERGE_MSG, and Merge says why it did nothing.
func TestMergeLeavesTheUsersMergeAlone(t *testing.T) {
	g := newRepo(t)
	job(t, g)
	conflicted(t, g)
	head, msg, err := g.MergeHead(t.Context())
	if err != nil || head == "" || msg != "the user's own merge" {
		t.Fatalf("MergeHead = %q, %q, %v", head, msg, err)
	}
	conflicts, err := g.Merge(t.Context(), "job", "Merge job")
	if err == nil || conflicts != nil || !strings.Contains(err.Error(), "in the middle of a merge (MERGE_HEAD") {
		t.Errorf("Merge into a merge in progress = %q, %v", conflicts, err)
	}
	if h, m, _ := g.MergeHead(t.Context()); h != head || m != msg {
		t.Errorf("the user's merge is now %q, %q; want %q, %q", h, m, head, msg)
	}
}

// InProgress names each operation git can leave a work tree in the middle
// of, and nothing in a clean one.
func TestInProgress(t *testing.T) {
	for _, tc := range []struct {
		name  string
		start func(t *testing.T, g Git)
		want  string
	}{
		{"clean", func(*testing.T, Git) {}, ""},
		{"merge", conflicted, "a merge (MERGE_HEAD"},
		{"cherry-pick", func(t *testing.T, g Git) {
			conflicted(t, g)
			must(t, g, "merge", "--abort")
			g.Run(t.Context(), "cherry-pick", "theirs")
		}, "a cherry-pick (CHERRY_PICK_HEAD"},
		{"revert", func(t *testing.T, g Git) {
			commitFile(t, g, "base.txt", "second\n", "second")
			commitFile(t, g, "base.txt", "third\n", "third")
			g.Run(t.Context(), "revert", "--no-edit", "HEAD~1")
		}, "a revert (REVERT_HEAD"},
		{"rebase", func(t *testing.T, g Git) {
			conflicted(t, g)
			must(t, g, "merge", "--abort")
			g.Run(t.Context(), "rebase", "theirs")
		}, "a rebase (rebase-merge"},
		{"bisect", func(t *testing.T, g Git) { must(t, g, "bisect", "start") }, "a bisect (BISECT_LOG"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := newRepo(t)
			tc.start(t, g)
			got, err := g.InProgress(t.Context())
			if err != nil || !strings.HasPrefix(got, tc.want) || (tc.want == "") != (got == "") {
				t.Errorf("InProgress = %q, %v; want %q...", got, err, tc.want)
			}
			// From a linked worktree's subdirectory, git's paths are
			// found too.
			if tc.want != "" {
				return
			}
			sub := filepath.Join(g.Dir, "sub")
			os.Mkdir(sub, 0o700)
			if got, err := g.In(sub).InProgress(t.Context()); got != "" || err != nil {
				t.Errorf("InProgress in a subdirectory = %q, %v", got, err)
			}
		})
	}
}

// A merge git refuses shows git's whole message, why on the first line:
// an untracked file in the way is named, and a hook's own reasons are
// shown; the checkout is left as it was.
func TestMergeFailureShowsGitsWholeMessage(t *testing.T) {
	g := newRepo(t)
	job(t, g)
	base := must(t, g, "rev-parse", "HEAD")
	os.WriteFile(filepath.Join(g.Dir, "job.txt"), []byte("mine\n"), 0o600)
	_, err := g.Merge(t.Context(), "job", "Merge job")
	first, _, _ := strings.Cut(fmt.Sprint(err), "\n")
	if err == nil || !strings.HasSuffix(first, ": exit status 2: error: The following untracked working tree files would be overwritten by merge:") || !strings.Contains(err.Error(), "\n  \tjob.txt") {
		t.Errorf("Merge with an untracked file in the way: %v", err)
	}
	os.Remove(filepath.Join(g.Dir, "job.txt"))

	hook := filepath.Join(g.Dir, ".git", "hooks", "pre-merge-commit")
	script := "#!/bin/sh\necho 'commitlint: subject may not be empty' >&2\necho 'see the docs'\nexit 1\n"
	if err := os.WriteFile(hook, []byte(script), 0o700); err != nil {
		t.Fatal(err)
	}
	_, err = g.Merge(t.Context(), "job", "Merge job")
	if err == nil || !strings.Contains(err.Error(), "\n  commitlint: subject may not be empty\n  see the docs") {
		t.Errorf("Merge refused by a hook: %v", err)
	}
	if head, _, _ := g.MergeHead(t.Context()); head != "" || must(t, g, "rev-parse", "HEAD") != base {
		t.Errorf("after the refused merge: MERGE_HEAD %q, HEAD %s (want %s)", head, must(t, g, "rev-parse", "HEAD"), base)
	}
	if paths, _ := g.ChangedPaths(t.Context()); len(paths) > 0 {
		t.Errorf("after the refused merge the checkout has changes: %q", paths)
	}
}

// detail keeps a long message's first and last lines, and cuts long
// lines: the line that says why (the last, here) on the first line.
func TestDetailIsBounded(t *testing.T) {
	var b strings.Builder
	for i := range 100 {
		fmt.Fprintf(&b, "line %d\n", i)
	}
	b.WriteString(strings.Repeat("x", 1000))
	tail := []byte(b.String())
	got := detail(proc.Result{Err: fmt.Errorf("exit status 1"), StderrTail: tail, StderrBytes: int64(len(tail))})
	lines := strings.Split(got, "\n")
	if len(lines) != 1+2*detailLines+1 || lines[1] != "  line 0" || lines[detailLines+1] != "  [... 76 more lines ...]" || lines[len(lines)-1] != "  line 99" {
		t.Errorf("detail of 101 lines:\n%s", got)
	}
	if first := lines[0]; len(first) > detailLineLen+30 || !strings.HasPrefix(first, "exit status 1: xxx") || !strings.HasSuffix(first, " [...]") {
		t.Errorf("a long line that says why is shown as %d bytes: %.40q", len(first), first)
	}
}

// A failed git command's error says why on its first line, git's error
// line (not the advice after it), and the rest of git's message below,
// in order; a message of that line alone is one line.
func TestFailedSaysWhyFirst(t *testing.T) {
	for tail, want := range map[string]string{
		"error: The following untracked working tree files would be overwritten by merge:\n\ta.txt\nPlease move or remove them before you merge.\nAborting\nMerge with strategy ort failed.\n": "git merge j: exit status 2: error: The following untracked working tree files would be overwritten by merge:\n  \ta.txt\n  Please move or remove them before you merge.\n  Aborting\n  Merge with strategy ort failed.",
		"hint: a\nfatal: bad\n": "git merge j: exit status 2: fatal: bad\n  hint: a",
		"fatal: bad\n":          "git merge j: exit status 2: fatal: bad",
		"":                      "git merge j: exit status 2",
	} {
		err := failed("git merge j", proc.Result{Err: fmt.Errorf("exit status 2"), StderrTail: []byte(tail), StderrBytes: int64(len(tail))})
		if err.Error() != want {
			t.Errorf("failed with %q:\n%s\nwant\n%s", tail, err, want)
		}
	}
}

// EndLeftovers ends the groups that a dead process recorded, and leaves
// those of a live one.
func TestEndLeftovers(t *testing.T) {
	groups := &Groups{Dir: filepath.Join(t.TempDir(), "groups")}
	// This process's records: a git command running, another starting.
	done := groups.start().started(os.Getpid())
	starting := groups.start()
	mine, _ := os.ReadDir(groups.Dir)

	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	pidFile := filepath.Join(t.TempDir(), "sleep")
	left := exec.Command("sh", "-c", "sleep 60 & echo $! > "+pidFile+"; wait")
	left.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := left.Start(); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, func() bool { data, _ := os.ReadFile(pidFile); return len(data) > 0 }, "the pid file")
	t.Cleanup(func() { syscall.Kill(-left.Process.Pid, syscall.SIGKILL); left.Wait() })
	start, _ := proc.StartTime(left.Process.Pid)
	// The dead process's records: one of a git command it was starting
	// when it died (its git died with it), then one of a command's group.
	for _, name := range []string{
		fmt.Sprintf("starting-7.%d-1", dead.Process.Pid),
		fmt.Sprintf("%d-%d.%d-1", left.Process.Pid, start, dead.Process.Pid),
	} {
		if err := os.WriteFile(filepath.Join(groups.Dir, name), nil, 0o600); err != nil {
			t.Fatal(err)
		}
		// since: the lock files its git may have left are to go.
		if since, err := groups.endGroups(); err != nil || since.IsZero() {
			t.Fatalf("endGroups = %v, %v with record %s; want when the dead process started", since, err, name)
		}
	}
	left.Wait()
	data, _ := os.ReadFile(pidFile)
	if stat, err := os.ReadFile("/proc/" + strings.TrimSpace(string(data)) + "/stat"); err == nil && !strings.Contains(string(stat), ") Z ") {
		t.Errorf("the dead process's group still runs: %s", stat)
	}
	after, _ := os.ReadDir(groups.Dir)
	if len(mine) != 2 || len(after) != 2 || after[0].Name() != mine[0].Name() || after[1].Name() != mine[1].Name() {
		t.Errorf("records: %v before, %v after; want this process's %v alone", mine, after, mine)
	}
	done()
	starting.end()
	if after, _ := os.ReadDir(groups.Dir); len(after) != 0 {
		t.Errorf("records left once the command ended: %v", after)
	}
}

// Contains says whether a branch has a commit; a missing branch has none.
func TestContains(t *testing.T) {
	g := newRepo(t)
	job(t, g)
	tip := must(t, g, "rev-parse", "job")
	for _, tc := range []struct {
		branch string
		want   bool
	}{{"job", true}, {"main", false}, {"gone", false}} {
		if got, err := g.Contains(t.Context(), tc.branch, tip); got != tc.want || err != nil {
			t.Errorf("Contains(%s) = %v, %v; want %v", tc.branch, got, err, tc.want)
		}
	}
	must(t, g, "merge", "-q", "--no-ff", "-m", "m", "job")
	if got, err := g.Contains(t.Context(), "main", tip); !got || err != nil {
		t.Errorf("Contains(main) after the merge = %v, %v", got, err)
	}
}

// RemoveWorktree removes what a git killed while it made a worktree left:
// the directory without its .git file, or with one naming a worktree git
// has forgotten.
func TestRemoveHalfMadeWorktree(t *testing.T) {
	for _, left := range []string{"no .git file", "forgotten"} {
		t.Run(left, func(t *testing.T) {
			g := newRepo(t)
			path := filepath.Join(g.Dir, ".runner", "wt")
			must(t, g, "worktree", "add", "-q", "-b", "wt", path)
			switch left {
			case "no .git file":
				os.Remove(filepath.Join(path, ".git"))
			case "forgotten":
				os.RemoveAll(filepath.Join(g.Dir, ".git", "worktrees", "wt"))
			}
			if err := g.RemoveWorktree(t.Context(), path); err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(path); !os.IsNotExist(err) {
				t.Errorf("the half-made worktree is still there: %v", err)
			}
			if list := must(t, g, "worktree", "list", "--porcelain"); strings.Count(list, "worktree ") != 1 {
				t.Errorf("git still lists it:\n%s", list)
			}
		})
	}
}

// What a merge that died writing the work tree left (the branch's files,
// untracked or changed, as the merge writes them) does not stop the same
// merge made again; a file with other content still does.
func TestMergeOverItsOwnLeftovers(t *testing.T) {
	g := newRepo(t)
	job(t, g)
	wt := filepath.Join(t.TempDir(), "base-change")
	must(t, g, "worktree", "add", "-q", "-b", "change", wt, "job")
	commitFile(t, g.In(wt), "base.txt", "changed by the job\n", "change base")
	os.WriteFile(filepath.Join(g.Dir, "job.txt"), []byte("job\n"), 0o600)
	os.WriteFile(filepath.Join(g.Dir, "base.txt"), []byte("changed by the job\n"), 0o600)
	if conflicts, err := g.Merge(t.Context(), "change", "Merge change"); err != nil || conflicts != nil {
		t.Fatalf("Merge over its own leftovers = %q, %v", conflicts, err)
	}
	if paths, _ := g.DirtyPaths(t.Context()); len(paths) > 0 {
		t.Errorf("after the merge the checkout has changes: %q", paths)
	}
}

// RemoveLocks removes the lock files a dead git left in a worktree's git
// directory and on its branch, and nothing else.
func TestRemoveLocks(t *testing.T) {
	g := newRepo(t)
	wt := filepath.Join(t.TempDir(), "wt")
	must(t, g, "worktree", "add", "-q", "-b", "runner/j", wt)
	gitDir := filepath.Join(g.Dir, ".git", "worktrees", "wt")
	locks := []string{filepath.Join(gitDir, "HEAD.lock"), filepath.Join(gitDir, "index.lock"), filepath.Join(g.Dir, ".git", "refs", "heads", "runner", "j.lock")}
	for _, lock := range locks {
		os.WriteFile(lock, nil, 0o600)
	}
	userLock := filepath.Join(g.Dir, ".git", "index.lock")
	os.WriteFile(userLock, nil, 0o600)
	if err := g.In(wt).RemoveLocks(t.Context(), "runner/j"); err != nil {
		t.Fatal(err)
	}
	for _, lock := range locks {
		if _, err := os.Stat(lock); !os.IsNotExist(err) {
			t.Errorf("%s is still there (%v)", lock, err)
		}
	}
	if _, err := os.Stat(userLock); err != nil {
		t.Errorf("the checkout's own index.lock was removed: %v", err)
	}
}

// RemoveRefLocks removes what a git killed deleting or updating a branch
// leaves (packed-refs.lock and .new, config.lock, a branch's lock), made
// since the dead process started; an older lock file stays.
func TestRemoveRefLocks(t *testing.T) {
	g := newRepo(t)
	gitDir := filepath.Join(g.Dir, ".git")
	os.MkdirAll(filepath.Join(gitDir, "refs", "heads", "runner"), 0o700)
	left := []string{"packed-refs.lock", "packed-refs.new", "config.lock", "refs/heads/runner/j.lock"}
	for _, lock := range left {
		os.WriteFile(filepath.Join(gitDir, lock), nil, 0o600)
	}
	since := time.Now().Add(-time.Minute)
	older := filepath.Join(gitDir, "refs", "heads", "old.lock")
	os.WriteFile(older, nil, 0o600)
	os.Chtimes(older, since.Add(-time.Hour), since.Add(-time.Hour))
	if err := g.RemoveRefLocks(t.Context(), since); err != nil {
		t.Fatal(err)
	}
	for _, lock := range left {
		if _, err := os.Stat(filepath.Join(gitDir, lock)); !os.IsNotExist(err) {
			t.Errorf("%s is still there (%v)", lock, err)
		}
	}
	if _, err := os.Stat(older); err != nil {
		t.Errorf("a lock file older than the dead process was removed: %v", err)
	}
}

// Message names the line that says why git failed, not the advice that
// follows it.
func TestMessageNamesWhy(t *testing.T) {
	for tail, want := range map[string]string{
		"fatal: Unable to create '/r/.git/index.lock': File exists.\n\nAnother git process seems to be running.\nremove the file manually to continue.\n": "exit status 128: fatal: Unable to create '/r/.git/index.lock': File exists.",
		"hint: something\nsome last line\n": "exit status 128: some last line",
		"":                                  "exit status 128",
	} {
		if got := Message(proc.Result{Err: fmt.Errorf("exit status 128"), StderrTail: []byte(tail)}); got != want {
			t.Errorf("Message of %q = %q, want %q", tail, got, want)
		}
	}
}
