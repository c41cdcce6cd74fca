package dispatchtest

import (
	"strings"
	"testing"

	"github.com/runnerdev/runner/internal/job"
	"github.com/runnerdev/runner/internal/testkit"
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
	r := testkit.GitCheckout(t, map[string]string{".gitignore": ".runner/\n"})
	r.Git("branch", "runner/conformance")
	return startIn(t, s, src, r.Dir, job.Options{ItemBranches: "runner-items/conformance/", TargetBranch: "main"}), r.Git
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
