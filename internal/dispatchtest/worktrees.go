package dispatchtest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/runnerdev/runner/internal/job"
)

// worktreeTemplate's item commits a file named after its word in its
// worktree and prints its worktree's branch.
const worktreeTemplate = `mode: mapreduce
map:
  input: seq 1 1
  isolation: worktree
  agent_template:
    - shell: "echo ${item.word} > ${item.word}.txt && git add -A && git commit -qm 'item ${item.word}' && echo on ${worktree.branch}"
`

// startRepo starts a job of src, whose map runs in worktrees, in a new git
// repository with one commit and the job branch, which becomes the
// working directory.
func startRepo(t *testing.T, s Subject, src string) (*fixture, func(args ...string) string) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	dir := t.TempDir()
	t.Chdir(dir)
	for _, kv := range [][2]string{{"GIT_AUTHOR_NAME", "t"}, {"GIT_COMMITTER_NAME", "t"}, {"GIT_AUTHOR_EMAIL", "t@example.com"}, {"GIT_COMMITTER_EMAIL", "t@example.com"}} {
		t.Setenv(kv[0], kv[1])
	}
	git := func(args ...string) string {
		t.Helper()
		out, err := exec.Command("git", args...).CombinedOutput()
		if err != nil {
			t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return strings.TrimSpace(string(out))
	}
	git("init", "-q", "-b", "main")
	if err := os.WriteFile(filepath.Join(dir, ".gitignore"), []byte(".runner/\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	git("add", "-A")
	git("commit", "-qm", "base")
	git("branch", "runner/conformance")
	return startIn(t, s, src, dir, job.Options{ItemBranches: "runner-items/conformance/", TargetBranch: "main"}), git
}

// An item of a map that runs in worktrees runs in a worktree of its own on
// its branch, made from the job branch's tip, and the outcome names that
// branch, which holds the item's commit in the job's repository; no
// worktree is left.
func testWorktrees(t *testing.T, s Subject) {
	f, git := startRepo(t, s, worktreeTemplate)
	skipUnless(t, f, f.backend.Can.Worktrees, "Worktrees")
	d := f.open(t)
	out, err := dispatch(t, d, f.task("w", ""))
	if err != nil {
		t.Fatalf("Dispatch: %v", err)
	}
	const branch = "runner-items/conformance/w"
	if out.Failed || out.Branch != branch || !strings.Contains(out.Output, "on "+branch) {
		t.Fatalf("outcome %+v, want a success on branch %s", out, branch)
	}
	d.Recorded(t.Context(), out.DispatchID)
	if msg := git("log", "-1", "--format=%s", branch); msg != "item w" {
		t.Errorf("the item's branch is at %q, want its commit", msg)
	}
	if parent, tip := git("rev-parse", branch+"^"), git("rev-parse", "runner/conformance"); parent != tip {
		t.Errorf("the item's commit is on %s, want the job branch's tip %s", parent, tip)
	}
	if trees := strings.Count(git("worktree", "list", "--porcelain"), "worktree "); trees != 1 {
		t.Errorf("%d worktrees after the item, want the repository's alone", trees)
	}
}
