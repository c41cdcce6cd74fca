package workspace

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/runnerdev/runner/internal/items"
	"github.com/runnerdev/runner/internal/itemtask"
	"github.com/runnerdev/runner/internal/state"
	"github.com/runnerdev/runner/internal/testkit"
	"github.com/runnerdev/runner/workflow"
)

func TestWorktreeName(t *testing.T) {
	long := strings.Repeat("x", 70)
	tests := []struct {
		id    string
		index int
		want  string
	}{
		{"item-3", 3, "item-3"},
		{"src/a b.go", 7, "src-a-b.go-7"},
		{"src:a-b.go", 8, "src-a-b.go-8"}, // made the same as the one above: the index keeps them apart
		{"../..", 2, "item-2"},
		{"a..b", 4, "a-b-4"},
		{"x.lock", 5, "x-5"},
		{".hidden", 6, "hidden-6"},
		{long, 1, strings.Repeat("x", 64) + "-1"},
	}
	for _, tt := range tests {
		if got := worktreeName(&items.Item{ID: tt.id, Index: tt.index}); got != tt.want {
			t.Errorf("worktreeName(%q) = %q, want %q", tt.id, got, tt.want)
		}
	}
}

// An item's worktree is made from the job branch's tip and removed at its
// end; a successful item's commits are merged (and its branch deleted
// once recorded, the merge counted as a move of the job branch), a conflicting one fails as merge_conflict with its
// branch kept and the job branch clean.
func TestWorktreesMerge(t *testing.T) {
	w, git, repo := testWorktrees(t)
	if err := w.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	edit := func(it *items.Item, content string) itemtask.Outcome {
		tree := editItem(t, w, git, it, "f.txt", content)
		if err := w.CloseItem(t.Context(), tree); err != nil {
			t.Fatal(err)
		}
		return itemtask.Outcome{Branch: tree.Branch}
	}
	a, b, c := &items.Item{ID: "a", Index: 0}, &items.Item{ID: "b", Index: 1}, &items.Item{ID: "c", Index: 2}
	outA, outB := edit(a, "a\n"), edit(b, "b\n") // both from the same tip
	moves := w.JobBranchMoves()
	outA, err := w.Merge(t.Context(), a, 1, outA)
	if err != nil || outA.Failed || len(outA.Commits) != 1 {
		t.Fatalf("merge of a = %+v, %v", outA, err)
	}
	if w.JobBranchMoves() == moves {
		t.Error("the merge of a is not counted as a move of the job branch: a tip read before it is taken as the tip still")
	}
	w.Recorded(t.Context(), outA)
	outB, err = w.Merge(t.Context(), b, 1, outB)
	if err != nil || !outB.Failed || outB.Failure.Kind != KindMergeConflict || !strings.Contains(outB.Failure.Message, "conflicts in f.txt") {
		t.Fatalf("merge of b = %+v, %v; want a merge_conflict in f.txt", outB, err)
	}
	w.Recorded(t.Context(), outB)
	if msg := git(repo, "log", "-1", "--format=%s", "runner/j"); msg != "Merge a (runner job j)" {
		t.Errorf("the job branch ends with %q", msg)
	}
	if st := git(w.Root, "status", "--porcelain"); st != "" {
		t.Errorf("the job worktree is not clean after the aborted merge: %q", st)
	}
	branches := git(repo, "branch", "--list", "runner-items/j/*")
	if strings.Contains(branches, "runner-items/j/a") || !strings.Contains(branches, "runner-items/j/b") {
		t.Errorf("item branches %q: want a's deleted and b's kept", branches)
	}
	// Resumed: a is merged (and its branch deleted), so the running a
	// whose branch is back at its merged tip counts as succeeded; b
	// (conflicted, unmerged) and c (no branch) run again.
	git(repo, "branch", "runner-items/j/a", "runner/j^2")
	merged, err := w.MergedItems(t.Context(), []*items.Item{a, b, c})
	if err != nil || len(merged) != 1 || merged[0].Branch != "runner-items/j/a" || len(merged[0].Commits) != 1 || merged[0].Commits[0] != outA.Commits[0] {
		t.Errorf("mergedItems = %+v, %v; want a alone, with its commit %v", merged, err, outA.Commits)
	}
	// Its branch gone, or elsewhere, a's merge is known by its message
	// (issue 23.1).
	git(repo, "branch", "-f", "runner-items/j/a", "main")
	if merged, err := w.MergedItems(t.Context(), []*items.Item{a, b, c}); err != nil || len(merged) != 1 || len(merged[0].Commits) != 1 || merged[0].Commits[0] != outA.Commits[0] {
		t.Errorf("mergedItems with a's branch moved = %+v, %v; want a alone, with its commit %v", merged, err, outA.Commits)
	}
	git(repo, "branch", "-D", "runner-items/j/a")
	if merged, err := w.MergedItems(t.Context(), []*items.Item{a, b, c}); err != nil || len(merged) != 1 || len(merged[0].Commits) != 1 {
		t.Errorf("mergedItems with a's branch gone = %+v, %v; want a alone", merged, err)
	}
	if err := w.EndJob(t.Context()); err != nil {
		t.Fatal(err)
	}
	// A resumed job whose worktree is gone gets it again, on the job
	// branch; a worktree of an item left behind is removed.
	if err := w.ResumeJob(t.Context()); err != nil {
		t.Fatal(err)
	}
	if msg := git(w.Root, "log", "-1", "--format=%s"); msg != "Merge a (runner job j)" {
		t.Errorf("the resumed job worktree is at %q", msg)
	}
	left, err := w.Acquire(t.Context(), c, false, "")
	if err != nil {
		t.Fatal(err)
	}
	if err := w.ResumeJob(t.Context()); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(left.Path); !os.IsNotExist(err) {
		t.Errorf("the item's worktree is still there: %v", err)
	}
	if err := w.EndJob(t.Context()); err != nil {
		t.Fatal(err)
	}
	if list := git(repo, "worktree", "list", "--porcelain"); strings.Count(list, "worktree ") != 1 {
		t.Errorf("worktrees left:\n%s", list)
	}
	if head := git(repo, "log", "-1", "--format=%s", "main"); head != "base" {
		t.Errorf("the user's branch moved to %q", head)
	}
}

// testWorktrees returns the worktrees of job j, whose map runs with
// isolation: worktree, in a new repository with one commit (f.txt), this
// process's directory; git runs git in a directory.
func testWorktrees(t *testing.T) (w *Worktrees, git func(dir string, args ...string) string, repo string) {
	t.Helper()
	git, repo = testRepo(t)
	dir := filepath.Join(t.TempDir(), "job")
	m := &workflow.MapPhase{Isolation: workflow.IsolationWorktree}
	w, err := OpenWorktrees(t.Context(), JobRefs{ID: "j", ItemBranches: ItemBranches(m, "j")}, m, os.Environ(), state.LayoutOf(dir))
	if err != nil {
		t.Fatal(err)
	}
	return w, git, repo
}

// editItem makes an item's worktree, writes content to the file name in
// it and commits it; the worktree is left.
func editItem(t *testing.T, w *Worktrees, git func(string, ...string) string, it *items.Item, name, content string) ItemTree {
	t.Helper()
	tree, err := w.Acquire(t.Context(), it, false, "")
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(tree.Path, name), []byte(content), 0o600)
	git(tree.Path, "add", name)
	git(tree.Path, "commit", "-qm", it.ID)
	return tree
}

// A dlq retry after the job ended (its worktree gone) and after a retry
// killed -9: startRetry removes the items' worktrees the killed retry
// left (no other retry runs: the DLQ is held), and finds the item it
// merged without recording; a merge makes the job worktree again, and
// endRetry removes it.
func TestWorktreesRetry(t *testing.T) {
	w, git, repo := testWorktrees(t)
	if err := w.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := w.EndJob(t.Context()); err != nil {
		t.Fatal(err)
	}
	b, c, d := &items.Item{ID: "b", Index: 1}, &items.Item{ID: "c", Index: 2}, &items.Item{ID: "d", Index: 3}
	// The killed retry: b was running; c ended (its worktree not yet
	// removed); d was merged, which made the job worktree again, and its
	// end not recorded.
	trees := []ItemTree{editItem(t, w, git, b, "b.txt", "b\n"), editItem(t, w, git, c, "c.txt", "c\n"), editItem(t, w, git, d, "d.txt", "d\n")}
	outD, err := w.Merge(t.Context(), d, 1, itemtask.Outcome{Branch: trees[2].Branch})
	if err != nil || outD.Failed {
		t.Fatalf("merge of d = %+v, %v", outD, err)
	}
	if msg := git(w.Root, "log", "-1", "--format=%s"); msg != "Merge d (runner job j)" {
		t.Errorf("the job worktree made for the merge is at %q", msg)
	}
	merged, err := w.StartRetry(t.Context(), []*items.Item{b, d})
	if err != nil || len(merged) != 1 || merged[3].Branch != trees[2].Branch || len(merged[3].Commits) != 1 {
		t.Errorf("startRetry = %+v, %v; want d alone, with its commit", merged, err)
	}
	for _, tree := range trees {
		if _, err := os.Stat(tree.Path); !os.IsNotExist(err) {
			t.Errorf("%s is left: %v", tree.Path, err)
		}
	}
	if err := w.EndRetry(t.Context()); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(w.Root); !os.IsNotExist(err) {
		t.Errorf("the job worktree is still there after the retry: %v", err)
	}
	if list := git(repo, "worktree", "list", "--porcelain"); strings.Count(list, "worktree ") != 1 {
		t.Errorf("worktrees: want the repository's alone\n%s", list)
	}
}

// An item's worktree is made whatever a process killed while git made or
// removed it left at its path (issue 23.2): a worktree registered and
// locked, its directory gone, which git worktree prune keeps and git
// worktree add refuses.
func TestAcquireAfterKilledGit(t *testing.T) {
	w, git, repo := testWorktrees(t)
	if err := w.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	it := &items.Item{ID: "a", Index: 0}
	tree, err := w.Acquire(t.Context(), it, false, "")
	if err != nil {
		t.Fatal(err)
	}
	admin := git(tree.Path, "rev-parse", "--absolute-git-dir")
	if err := os.WriteFile(filepath.Join(admin, "locked"), []byte("initializing"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(tree.Path); err != nil {
		t.Fatal(err)
	}
	if tree, err = w.Acquire(t.Context(), it, false, ""); err != nil {
		t.Fatal(err)
	}
	if b := git(tree.Path, "symbolic-ref", "--short", "HEAD"); b != "runner-items/j/a" {
		t.Errorf("the item's worktree is on %q", b)
	}
	if err := w.CloseItem(t.Context(), tree); err != nil {
		t.Fatal(err)
	}
	if list := git(repo, "worktree", "list", "--porcelain"); strings.Count(list, "worktree ") != 2 {
		t.Errorf("worktrees: want the repository's and the job's\n%s", list)
	}
}

// A process killed -9 in an item's merge (its git gets SIGTERM, its
// parent-death signal, which lands as a system call returns: as readily
// between creating a file and writing it as anywhere) leaves in the job
// worktree what git had written, whole or cut short, that the index does
// not have: the item's new file empty and untracked, a file it changes
// emptied. The next holder of the merge lock puts back what was written
// since the dead holder took the lock, and the item's merge, made again,
// succeeds once; an untracked file older than that (a setup step's) stays.
func TestMergeAfterAMergeKilledWritingFiles(t *testing.T) {
	w, git, repo := testWorktrees(t)
	if err := w.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	a := &items.Item{ID: "a", Index: 0}
	tree := editItem(t, w, git, a, "a.txt", "a\n")
	os.WriteFile(filepath.Join(tree.Path, "f.txt"), []byte("changed by a\n"), 0o600)
	git(tree.Path, "commit", "-qam", "a changes f")
	if err := w.CloseItem(t.Context(), tree); err != nil {
		t.Fatal(err)
	}

	since := time.Now().Add(-time.Minute) // when the dead holder took the lock
	setup := filepath.Join(w.Root, "setup.txt")
	os.WriteFile(setup, []byte("setup\n"), 0o600)
	os.Chtimes(setup, since.Add(-time.Minute), since.Add(-time.Minute))
	os.WriteFile(w.lockPath, []byte("999999-1"), 0o600)
	os.Chtimes(w.lockPath, since, since)
	for _, name := range []string{"a.txt", "f.txt"} {
		os.WriteFile(filepath.Join(w.Root, name), nil, 0o600) // created, not written
	}

	out, err := w.Merge(t.Context(), a, 1, itemtask.Outcome{Branch: tree.Branch})
	if err != nil || out.Failed || !out.Merged || len(out.Commits) != 2 {
		t.Fatalf("merge of a over its killed merge's files = %+v, %v", out, err)
	}
	if merges := git(repo, "log", "--merges", "--format=%s", "runner/j"); merges != "Merge a (runner job j)" {
		t.Errorf("the job branch's merges: %q, want a's once", merges)
	}
	for name, want := range map[string]string{"a.txt": "a\n", "f.txt": "changed by a\n", "setup.txt": "setup\n"} {
		if data, _ := os.ReadFile(filepath.Join(w.Root, name)); string(data) != want {
			t.Errorf("%s in the job worktree holds %q, want %q", name, data, want)
		}
	}
	if st := git(w.Root, "status", "--porcelain"); st != "?? setup.txt" {
		t.Errorf("the job worktree's status: %q, want the setup step's file alone", st)
	}
}

// On a NATS worker the clone has no job branch: an item's worktree starts
// from the commit its task names, on the item's branch.
func TestAcquireFromCommit(t *testing.T) {
	w, git, repo := testWorktrees(t)
	first := git(repo, "rev-parse", "HEAD")
	git(repo, "commit", "-q", "--allow-empty", "-m", "later")
	it := &items.Item{ID: "a", Index: 0}
	tree, err := w.Acquire(t.Context(), it, false, first)
	if err != nil {
		t.Fatal(err)
	}
	defer w.CloseItem(t.Context(), tree)
	if at := git(tree.Path, "rev-parse", "HEAD"); at != first {
		t.Errorf("the item's worktree is at %s, want %s", at, first)
	}
	if branch := git(tree.Path, "symbolic-ref", "--short", "HEAD"); branch != tree.Branch {
		t.Errorf("the item's worktree is on %q, want %q", branch, tree.Branch)
	}
}

// A recorded item's branch is deleted holding the repository's worktree
// lock, as its other branches are made (a worktree's add, a fetch of a
// NATS item's bundle): git deleting the last branch of a directory
// removes the directory of its reflog, and a git making a branch there
// meanwhile fails.
func TestRecordedDeletesBranchHoldingWorktreeLock(t *testing.T) {
	w, git, repo := testWorktrees(t)
	git(repo, "branch", "runner-items/j/a")
	deleted := make(chan struct{})
	err := w.Admin(func() error {
		go func() {
			w.Recorded(t.Context(), itemtask.Outcome{Branch: "runner-items/j/a"})
			close(deleted)
		}()
		select {
		case <-deleted:
			t.Error("the branch was deleted while another process held the worktree lock")
		case <-time.After(300 * time.Millisecond):
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-deleted:
	case <-time.After(testkit.Scale(10 * time.Second)):
		t.Fatal("the branch was not deleted once the worktree lock was free")
	}
	if b := git(repo, "branch", "--list", "runner-items/*"); b != "" {
		t.Errorf("branches left: %q", b)
	}
}
