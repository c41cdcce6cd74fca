package gitwork

import (
	"errors"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/runnerdev/runner/internal/proc"
	"github.com/runnerdev/runner/internal/testkit"
)

// testEnv is git's environment in the tests: a fixed identity, and no
// user or system configuration.
func testEnv(t *testing.T) []string {
	return append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com",
		"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com",
		"GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1", "HOME="+t.TempDir())
}

// newRepo makes a repository with one commit of base.txt on main.
func newRepo(t *testing.T) Git {
	t.Helper()
	return Git{Dir: testkit.GitRepo(t, map[string]string{"base.txt": "base\n"}).Dir, Env: testEnv(t)}
}

func must(t *testing.T, g Git, args ...string) string {
	t.Helper()
	out, err := g.Output(t.Context(), args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func commitFile(t *testing.T, g Git, name, content, msg string) string {
	t.Helper()
	if err := os.WriteFile(filepath.Join(g.Dir, name), []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	must(t, g, "add", name)
	must(t, g, "commit", "-q", "-m", msg)
	return must(t, g, "rev-parse", "HEAD")
}

func TestTopLevelHeadAndDirtyPaths(t *testing.T) {
	g := newRepo(t)
	sub := filepath.Join(g.Dir, "a", "b")
	if err := os.MkdirAll(sub, 0o700); err != nil {
		t.Fatal(err)
	}
	top, prefix, err := g.In(sub).TopLevel(t.Context())
	if real, _ := filepath.EvalSymlinks(g.Dir); err != nil || top != real || prefix != "a/b/" {
		t.Errorf("TopLevel = %q, %q, %v; want %q, a/b/", top, prefix, err, real)
	}
	if _, _, err := g.In(t.TempDir()).TopLevel(t.Context()); !errors.Is(err, ErrNotRepository) {
		t.Errorf("TopLevel outside a repository: %v", err)
	}
	head, err := g.Head(t.Context())
	if err != nil || head != must(t, g, "rev-parse", "HEAD") {
		t.Errorf("Head = %q, %v", head, err)
	}
	unborn := Git{Dir: t.TempDir(), Env: g.Env}
	must(t, unborn, "init", "-q")
	if head, err := unborn.Head(t.Context()); head != "" || err != nil {
		t.Errorf("Head of an unborn branch = %q, %v", head, err)
	}

	if paths, err := g.DirtyPaths(t.Context()); len(paths) != 0 || err != nil {
		t.Errorf("DirtyPaths of a clean tree = %q, %v", paths, err)
	}
	os.WriteFile(filepath.Join(g.Dir, "base.txt"), []byte("changed\n"), 0o600)
	os.WriteFile(filepath.Join(g.Dir, "new file.txt"), nil, 0o600)
	must(t, g, "mv", "base.txt", "moved.txt")
	paths, err := g.DirtyPaths(t.Context())
	if err != nil || !slices.Equal(paths, []string{"moved.txt", "new file.txt"}) {
		t.Errorf("DirtyPaths = %q, %v; want the renamed and the untracked file", paths, err)
	}
	paths, err = g.ChangedPaths(t.Context())
	if err != nil || !slices.Equal(paths, []string{"moved.txt"}) {
		t.Errorf("ChangedPaths = %q, %v; want the renamed file only", paths, err)
	}
}

func TestNames(t *testing.T) {
	for _, tt := range []struct {
		paths []string
		want  string
	}{
		{[]string{"a"}, "a"},
		{[]string{"a", "b", "c", "d", "e"}, "a, b, c, d, e"},
		{[]string{"a", "b", "c", "d", "e", "f", "g"}, "a, b, c, d, e and 2 more"},
	} {
		if got := Names(tt.paths); got != tt.want {
			t.Errorf("Names(%q) = %q, want %q", tt.paths, got, tt.want)
		}
	}
}

// Branch names the branch checked out, and none when HEAD is detached.
func TestBranch(t *testing.T) {
	g := newRepo(t)
	if b, err := g.Branch(t.Context()); b != "main" || err != nil {
		t.Errorf("Branch = %q, %v; want main", b, err)
	}
	must(t, g, "checkout", "-q", "--detach")
	if b, err := g.Branch(t.Context()); b != "" || err != nil {
		t.Errorf("Branch of a detached HEAD = %q, %v; want none", b, err)
	}
	if _, err := g.In(t.TempDir()).Branch(t.Context()); err == nil {
		t.Error("Branch outside a repository: no error")
	}
}

// A worktree on a new branch; its commits; merged back with a merge
// commit; the branch deleted; the worktree removed and listed no more.
func TestWorktreeMergeAndCleanup(t *testing.T) {
	g := newRepo(t)
	base := must(t, g, "rev-parse", "HEAD")
	trees := filepath.Join(t.TempDir(), "trees")
	path := filepath.Join(trees, "one")
	if err := g.NewWorktree(t.Context(), path, "work/one", base); err != nil {
		t.Fatal(err)
	}
	if err := g.NewWorktree(t.Context(), filepath.Join(trees, "again"), "work/one", base); err == nil {
		t.Error("NewWorktree on a branch that exists succeeded")
	}
	wt := g.In(path)
	first := commitFile(t, wt, "one.txt", "1\n", "one")
	second := commitFile(t, wt, "two.txt", "2\n", "two")
	commits, err := g.Commits(t.Context(), "main", "work/one")
	if err != nil || !slices.Equal(commits, []string{first, second}) {
		t.Errorf("Commits = %q, %v; want %q", commits, err, []string{first, second})
	}
	if commits, err := g.Commits(t.Context(), "work/one", "work/one"); err != nil || commits == nil || len(commits) != 0 {
		t.Errorf("Commits of nothing = %#v, %v; want an empty list", commits, err)
	}
	list, err := g.Worktrees(t.Context(), trees)
	if err != nil || len(list) != 1 || list[0].Branch != "work/one" || filepath.Base(list[0].Path) != "one" {
		t.Errorf("Worktrees = %+v, %v", list, err)
	}

	if conflicts, err := g.Merge(t.Context(), "work/one", "Merge one"); err != nil || conflicts != nil {
		t.Fatalf("Merge = %q, %v", conflicts, err)
	}
	if msg := must(t, g, "log", "-1", "--format=%s%n%P"); msg != "Merge one\n"+base+" "+second {
		t.Errorf("the merge commit is %q, want a merge of %s into %s", msg, second, base)
	}
	merge := must(t, g, "rev-parse", "HEAD")
	merges, err := g.Merges(t.Context(), "main")
	if want := []MergeCommit{{Commit: merge, Parents: []string{base, second}, Message: "Merge one"}}; err != nil || !reflect.DeepEqual(merges, want) {
		t.Errorf("Merges = %+v, %v; want %+v", merges, err, want)
	}
	if merges, err := g.Merges(t.Context(), merge+"..main"); len(merges) != 0 || err != nil {
		t.Errorf("Merges since the last = %+v, %v; want none", merges, err)
	}
	if tip, err := g.Tip(t.Context(), "work/one"); tip != second || err != nil {
		t.Errorf("Tip = %q, %v; want %s", tip, err, second)
	}
	if tip, err := g.Tip(t.Context(), "no-such-branch"); tip != "" || err != nil {
		t.Errorf("Tip of no branch = %q, %v", tip, err)
	}
	if err := g.RemoveWorktree(t.Context(), path); err != nil {
		t.Fatal(err)
	}
	if err := g.RemoveWorktree(t.Context(), path); err != nil {
		t.Errorf("removing a worktree that is gone: %v", err)
	}
	if err := g.DeleteBranch(t.Context(), "work/one"); err != nil {
		t.Fatal(err)
	}
	if list, err := g.Worktrees(t.Context(), trees); len(list) != 0 || err != nil {
		t.Errorf("Worktrees after removal = %+v, %v", list, err)
	}
	if _, err := g.Output(t.Context(), "rev-parse", "--verify", "-q", "work/one"); err == nil {
		t.Error("the branch is still there")
	}
}

// A merge that conflicts is aborted: the conflicting paths are returned
// and the work tree is clean, HEAD where it was.
func TestMergeConflictAborts(t *testing.T) {
	g := newRepo(t)
	base := must(t, g, "rev-parse", "HEAD")
	path := filepath.Join(t.TempDir(), "other")
	if err := g.ResetWorktree(t.Context(), path, "other", base); err != nil {
		t.Fatal(err)
	}
	commitFile(t, g.In(path), "base.txt", "theirs\n", "theirs")
	commitFile(t, g.In(path), "clean.txt", "x\n", "clean")
	ours := commitFile(t, g, "base.txt", "ours\n", "ours")
	conflicts, err := g.Merge(t.Context(), "other", "Merge other")
	if err != nil || !slices.Equal(conflicts, []string{"base.txt"}) {
		t.Fatalf("Merge = %q, %v; want a conflict in base.txt", conflicts, err)
	}
	if head := must(t, g, "rev-parse", "HEAD"); head != ours {
		t.Errorf("HEAD moved to %s", head)
	}
	if paths, err := g.DirtyPaths(t.Context()); len(paths) != 0 || err != nil {
		t.Errorf("after the abort the tree has changes %q, %v", paths, err)
	}
	if merges, err := g.Merges(t.Context(), "main"); len(merges) != 0 || err != nil {
		t.Errorf("Merges after an aborted merge = %+v, %v", merges, err)
	}
	// ResetWorktree moves a branch that exists to where it is told.
	if err := g.RemoveWorktree(t.Context(), path); err != nil {
		t.Fatal(err)
	}
	if err := g.ResetWorktree(t.Context(), path, "other", ours); err != nil {
		t.Fatal(err)
	}
	if head, _ := g.In(path).Head(t.Context()); head != ours {
		t.Errorf("the reset branch is at %s, want %s", head, ours)
	}
}

// AbortMerge ends a merge a process left in conflict, and does nothing
// without one; AddWorktree checks out a branch that exists.
func TestAbortMergeAndAddWorktree(t *testing.T) {
	g := newRepo(t)
	base := must(t, g, "rev-parse", "HEAD")
	must(t, g, "branch", "other")
	if err := g.AbortMerge(t.Context()); err != nil {
		t.Errorf("AbortMerge without a merge: %v", err)
	}
	path := filepath.Join(t.TempDir(), "other")
	if err := g.AddWorktree(t.Context(), path, "other"); err != nil {
		t.Fatal(err)
	}
	if head, _ := g.In(path).Head(t.Context()); head != base {
		t.Errorf("the worktree is at %s, want %s", head, base)
	}
	commitFile(t, g.In(path), "base.txt", "theirs\n", "theirs")
	ours := commitFile(t, g, "base.txt", "ours\n", "ours")
	if res := g.Run(t.Context(), "merge", "other"); res.Kind == proc.KindOK {
		t.Fatal("the merge did not conflict")
	}
	if err := g.AbortMerge(t.Context()); err != nil {
		t.Fatal(err)
	}
	if paths, _ := g.DirtyPaths(t.Context()); len(paths) != 0 || must(t, g, "rev-parse", "HEAD") != ours {
		t.Errorf("after AbortMerge: changes %q, HEAD %s", paths, must(t, g, "rev-parse", "HEAD"))
	}
}

// A merge that fails for another reason than a conflict is an error, with
// no conflicts.
func TestMergeOfNoBranchFails(t *testing.T) {
	g := newRepo(t)
	conflicts, err := g.Merge(t.Context(), "no-such-branch", "m")
	if err == nil || conflicts != nil {
		t.Errorf("Merge of a missing branch = %q, %v", conflicts, err)
	}
}

// MergedBranches lists the branches the target has: one merged into it
// and one with no commits of its own, not one whose commits it lacks.
func TestMergedBranches(t *testing.T) {
	g := newRepo(t)
	must(t, g, "branch", "items/empty")
	must(t, g, "checkout", "-q", "-b", "items/merged")
	commitFile(t, g, "m.txt", "m\n", "merged work")
	must(t, g, "checkout", "-q", "main")
	must(t, g, "merge", "-q", "--no-ff", "-m", "merge", "items/merged")
	must(t, g, "checkout", "-q", "-b", "items/open")
	commitFile(t, g, "o.txt", "o\n", "open work")
	must(t, g, "checkout", "-q", "main")
	got, err := g.MergedBranches(t.Context(), "main", "items/*")
	if err != nil || !slices.Equal(got, []string{"items/empty", "items/merged"}) {
		t.Errorf("MergedBranches = %q, %v; want items/empty and items/merged", got, err)
	}
	if got, err := g.MergedBranches(t.Context(), "main", "nothing/*"); err != nil || got != nil {
		t.Errorf("MergedBranches of no branch = %q, %v", got, err)
	}
}

// Job ids git cannot use in a branch name are refused with git's rules
// (issue 23.11), and the branches in the way of a new branch or directory
// of branches are found: the same name, a branch named like a directory
// above it, any branch below it (issue 23.12, 23.13).
func TestBranchNamesAndBranchesInTheWay(t *testing.T) {
	g := newRepo(t)
	for _, name := range []string{"runner/x.lock", "runner/a..b", "runner/trailing.", "runner/.hidden", "runner-items/x.lock/1"} {
		if err := g.CheckBranchName(t.Context(), name); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	for _, name := range []string{"runner/x", "runner/-x", "runner-items/a.b/item_1"} {
		if err := g.CheckBranchName(t.Context(), name); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	for _, b := range []string{"runner/d", "runner/d.items/1", "runner-items/e/1", "runner-items/e/2", "runnerx", "other"} {
		must(t, g, "branch", b)
	}
	must(t, g, "tag", "runner/d.items/1") // a tag of a branch's name: git shortens the branch's to heads/...
	tests := []struct {
		names []string
		want  []string
	}{
		{[]string{"runner/d", "runner-items/d"}, []string{"runner/d"}},
		{[]string{"runner/d.items", "runner-items/d.items"}, []string{"runner/d.items/1"}},
		{[]string{"runner/e", "runner-items/e"}, []string{"runner-items/e/1", "runner-items/e/2"}},
		{[]string{"runner/f", "runner-items/f"}, nil},
		{[]string{"other/f"}, []string{"other"}},
	}
	if dir, err := g.CommonDir(t.Context()); err != nil || dir != filepath.Join(g.Dir, ".git") {
		t.Errorf("CommonDir = %q, %v; want %s", dir, err, filepath.Join(g.Dir, ".git"))
	}
	head := must(t, g, "rev-parse", "HEAD")
	if tips, err := g.Tips(t.Context(), "runner-items/e/"); err != nil || !maps.Equal(tips, map[string]string{"runner-items/e/1": head, "runner-items/e/2": head}) {
		t.Errorf("Tips = %v, %v; want runner-items/e/1 and 2 at %s", tips, err, head)
	}
	for _, tt := range tests {
		got, err := g.BranchesInTheWay(t.Context(), tt.names...)
		if err != nil || !slices.Equal(got, tt.want) {
			t.Errorf("BranchesInTheWay(%q) = %q, %v; want %q", tt.names, got, err, tt.want)
		}
	}
}

// A job's branches are found by name (not those of a job whose id only
// starts the same), and OnlyOn counts the commits that deleting a set of
// branches would lose: none of one merged into main, those of one that is
// not, also when another of the set has them (issue 25.4).
func TestBranchesUnderAndOnlyOn(t *testing.T) {
	g := newRepo(t)
	must(t, g, "checkout", "-q", "-b", "runner/j")
	commitFile(t, g, "j.txt", "j\n", "job work")
	must(t, g, "checkout", "-q", "-b", "runner-items/j/1")
	commitFile(t, g, "i.txt", "i\n", "item work")
	must(t, g, "checkout", "-q", "main")
	must(t, g, "branch", "runner/j2")
	got, err := g.BranchesUnder(t.Context(), "runner/j", "runner-items/j/")
	if want := []string{"runner-items/j/1", "runner/j"}; err != nil || !slices.Equal(got, want) {
		t.Fatalf("BranchesUnder = %q, %v; want %q", got, err, want)
	}
	if n, err := g.OnlyOn(t.Context(), "runner-items/j/1", got); err != nil || n != 2 {
		t.Errorf("OnlyOn(item, job's branches) = %d, %v; want 2", n, err)
	}
	if n, err := g.OnlyOn(t.Context(), "runner/j", []string{"runner/j"}); err != nil || n != 0 {
		t.Errorf("OnlyOn(job branch, itself), the item branch having its commit = %d, %v; want 0", n, err)
	}
	if none, err := g.BranchesUnder(t.Context()); err != nil || none != nil {
		t.Errorf("BranchesUnder() = %q, %v; want none", none, err)
	}
	must(t, g, "merge", "-q", "--no-ff", "-m", "merge", "runner-items/j/1")
	for _, b := range got {
		if n, err := g.OnlyOn(t.Context(), b, got); err != nil || n != 0 {
			t.Errorf("OnlyOn(%s) once merged into main = %d, %v; want 0", b, n, err)
		}
	}
}

// TestDiscardWorktree: an item's worktree and branch are gone after
// DiscardWorktree whatever a git killed midway left: the worktree whole,
// half removed (its directory gone, git still knowing it: the leftover of
// a git worktree remove killed when a NATS worker's run was cut off from
// its server), half made (locked, its HEAD not written) or half made
// without its .git file; a branch with no worktree, and none at all, are
// fine too; the worktree of another branch stays.
func TestDiscardWorktree(t *testing.T) {
	g := newRepo(t)
	dir := t.TempDir()
	other := filepath.Join(dir, "other")
	must(t, g, "worktree", "add", "-q", "-b", "runner-items/j/other", other)
	common := must(t, g, "rev-parse", "--git-common-dir")
	if !filepath.IsAbs(common) {
		common = filepath.Join(g.Dir, common)
	}
	for _, c := range []struct {
		name  string
		leave func(path string) // what the killed git left at path
	}{
		{"whole", func(string) {}},
		{"half removed", func(path string) { os.RemoveAll(path) }},
		{"half made", func(path string) {
			admin := filepath.Join(common, "worktrees", filepath.Base(path))
			os.WriteFile(filepath.Join(admin, "HEAD"), []byte(strings.Repeat("0", 40)+"\n"), 0o600)
			os.WriteFile(filepath.Join(admin, "locked"), []byte("initializing"), 0o600)
		}},
		{"half made without .git", func(path string) {
			os.Remove(filepath.Join(path, ".git"))
			os.WriteFile(filepath.Join(common, "worktrees", filepath.Base(path), "locked"), []byte("initializing"), 0o600)
		}},
		{"no worktree", nil},
		{"nothing", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			path, branch := filepath.Join(dir, strings.ReplaceAll(c.name, " ", "-")), "runner-items/j/"+strings.ReplaceAll(c.name, " ", "-")
			switch {
			case c.leave != nil:
				must(t, g, "worktree", "add", "-q", "-b", branch, path)
				c.leave(path)
			case c.name == "no worktree":
				must(t, g, "branch", branch)
			}
			if err := g.DiscardWorktree(t.Context(), path, branch); err != nil {
				t.Fatal(err)
			}
			if branches := must(t, g, "branch", "--format=%(refname:short)"); branches != "main\nrunner-items/j/other" {
				t.Errorf("branches %q, want main and the other worktree's", branches)
			}
			if _, err := os.Stat(path); !os.IsNotExist(err) {
				t.Errorf("the worktree's directory is still there: %v", err)
			}
			if trees := strings.Count(must(t, g, "worktree", "list", "--porcelain"), "worktree "); trees != 2 {
				t.Errorf("%d worktrees, want the repository's and the other branch's", trees)
			}
		})
	}
}

// CanMakeBranch refuses, with git's reason, a branch that a ref is in the
// way of (above it or below it), accepts one that exists (worktree add -B
// resets it), is new, or is locked a moment by another git, and makes
// nothing.
func TestCanMakeBranch(t *testing.T) {
	g := newRepo(t)
	head := must(t, g, "rev-parse", "HEAD")
	if err := os.WriteFile(filepath.Join(g.Dir, ".git", "refs", "heads", "locked.lock"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, b := range []string{"runner/d2.items", "runner-items/e/1/x", "kept/1"} {
		must(t, g, "branch", b)
	}
	refused := map[string]string{
		"runner/d2.items/1": "git update-ref: exit status 128: fatal: cannot lock ref 'refs/heads/runner/d2.items/1': 'refs/heads/runner/d2.items' exists; cannot create 'refs/heads/runner/d2.items/1'",
		"runner-items/e/1":  "git update-ref: exit status 128: fatal: cannot lock ref 'refs/heads/runner-items/e/1': 'refs/heads/runner-items/e/1/x' exists; cannot create 'refs/heads/runner-items/e/1'",
	}
	for branch, want := range refused {
		if err := g.CanMakeBranch(t.Context(), branch, head); err == nil || err.Error() != want {
			t.Errorf("CanMakeBranch(%s) = %v, want %s", branch, err, want)
		}
	}
	for _, branch := range []string{"kept/1", "runner-items/e/2", "locked"} {
		if err := g.CanMakeBranch(t.Context(), branch, head); err != nil {
			t.Errorf("CanMakeBranch(%s) = %v, want nil", branch, err)
		}
	}
	if tip, err := g.Tip(t.Context(), "runner-items/e/2"); err != nil || tip != "" {
		t.Errorf("CanMakeBranch made runner-items/e/2 (%q, %v)", tip, err)
	}
}

// ForgetWorktree has git forget worktrees whose directory moved away
// with the one above it (a job's directory renamed to its tombstone),
// locked or not, and one whose record a killed git left half removed, so
// that their branches can be deleted; the directories moved are not
// touched.
func TestForgetWorktree(t *testing.T) {
	g := newRepo(t)
	jobs := t.TempDir()
	dir, moved := filepath.Join(jobs, "j"), filepath.Join(jobs, ".rm-j")
	trees := []string{filepath.Join(dir, "worktree"), filepath.Join(dir, "worktrees", "1"), filepath.Join(dir, "worktrees", "2")}
	for i, tree := range trees {
		must(t, g, "worktree", "add", "-q", "-b", "b"+strconv.Itoa(i), tree)
	}
	must(t, g, "worktree", "lock", trees[1])
	// A record half removed: git no longer lists it.
	common := must(t, g, "rev-parse", "--path-format=absolute", "--git-common-dir")
	if err := os.Remove(filepath.Join(common, "worktrees", "2", "gitdir")); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(dir, moved); err != nil {
		t.Fatal(err)
	}
	for _, tree := range trees {
		if err := g.ForgetWorktree(t.Context(), tree); err != nil {
			t.Errorf("ForgetWorktree(%s): %v", tree, err)
		}
	}
	if n := strings.Count(must(t, g, "worktree", "list", "--porcelain"), "worktree "); n != 1 {
		t.Errorf("%d worktrees, want the repository's alone", n)
	}
	if left, err := os.ReadDir(filepath.Join(common, "worktrees")); err == nil && len(left) > 0 {
		t.Errorf("git's records of worktrees left: %v", left)
	}
	for i := range trees {
		must(t, g, "branch", "-D", "b"+strconv.Itoa(i))
	}
	if _, err := os.Stat(filepath.Join(moved, "worktrees", "1", "base.txt")); err != nil {
		t.Errorf("the moved worktree's files: %v", err)
	}
}
