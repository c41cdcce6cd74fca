package job

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/runnerdev/runner/internal/state"
	"github.com/runnerdev/runner/internal/testkit"
	"github.com/runnerdev/runner/internal/workspace"
	"github.com/runnerdev/runner/workflow"
)

// startStandard starts job s of a standard workflow whose source is src.
func startStandard(t *testing.T, src string) *Job {
	t.Helper()
	wf, err := workflow.Parse("s.yml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	j, err := Start(wf, []byte(src), Options{Store: state.Store{Dir: filepath.Join(t.TempDir(), "state")}, JobID: "s", Stdout: io.Discard, Stderr: io.Discard, TargetBranch: "main"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { j.Close() })
	return j
}

// A standard workflow with a merge: block runs its commands in the job
// worktree on runner/<job id>, whose commits stay off the user's branch;
// the merge block runs only when a merge is asked for, in that worktree,
// with ${merge.*}; the worktree is gone at the end and the branch stays.
func TestRunInWorktree(t *testing.T) {
	const src = `commands:
  - shell: echo work > w.txt && git add w.txt && git commit -qm work
merge:
  - shell: echo "${merge.source_branch} ${merge.target_branch} ${merge.session_id}" > ../merge.txt
`
	for _, merge := range []bool{false, true} {
		r := testkit.GitCheckout(t, map[string]string{"f.txt": "base\n"})
		git, repo := r.In, r.Dir
		j := startStandard(t, src)
		pr, end, err := j.RunInWorktree(t.Context(), workspace.Ending{Merge: merge})
		if err != nil || pr.Succeeded != 1 {
			t.Fatalf("merge %v: RunInWorktree = %+v, %v", merge, pr, err)
		}
		want := workspace.End{Branch: "runner/s", Target: "main"}
		if merge {
			want.Merged = workspace.MergedByBlock
		}
		if end != want {
			t.Errorf("merge %v: end %+v, want %+v", merge, end, want)
		}
		if msg := git(repo, "log", "-1", "--format=%s", "runner/s"); msg != "work" {
			t.Errorf("merge %v: the job branch ends with %q", merge, msg)
		}
		if msg := git(repo, "log", "-1", "--format=%s", "main"); msg != "base" {
			t.Errorf("merge %v: the user's branch moved to %q", merge, msg)
		}
		if _, err := os.Stat("w.txt"); !os.IsNotExist(err) {
			t.Errorf("merge %v: the command wrote in the user's checkout: %v", merge, err)
		}
		if list := git(repo, "worktree", "list", "--porcelain"); strings.Count(list, "worktree ") != 1 {
			t.Errorf("merge %v: worktrees left:\n%s", merge, list)
		}
		// The merge step ran in the job worktree and wrote beside it.
		data, err := os.ReadFile(filepath.Join(j.Layout().Dir, "merge.txt"))
		if got := strings.TrimSpace(string(data)); merge != (err == nil) || merge && got != "runner/s main s" {
			t.Errorf("merge %v: the merge block wrote %q (%v)", merge, got, err)
		}
	}
}

// Without --merge the ending asks (a terminal's question) once the job
// succeeded: yes merges, no leaves the branch; a job that failed is never
// asked about.
func TestRunInWorktreeAsks(t *testing.T) {
	const src = "commands:\n  - shell: echo w > w.txt && git add w.txt && git commit -qm work%s\nmerge_back: false\nisolation: worktree\n"
	for _, tt := range []struct {
		fail        string
		answer      bool
		asked       int
		merged      string
		userHasWork bool
	}{
		{"", true, 1, workspace.MergedByGit, true},
		{"", false, 1, "", false},
		{" && false", true, 0, "", false},
	} {
		r := testkit.GitCheckout(t, map[string]string{"f.txt": "base\n"})
		git, repo := r.In, r.Dir
		j := startStandard(t, fmt.Sprintf(src, tt.fail))
		asked := 0
		ask := func(end workspace.End) bool {
			asked++
			if end.Branch != "runner/s" || end.Target != "main" {
				t.Errorf("asked about %+v", end)
			}
			return tt.answer
		}
		_, end, _ := j.RunInWorktree(t.Context(), workspace.Ending{Ask: ask})
		if asked != tt.asked || end.Merged != tt.merged {
			t.Errorf("%+v: asked %d times, merged %q", tt, asked, end.Merged)
		}
		if msg := git(repo, "log", "-1", "--format=%s", "main"); (msg != "base") != tt.userHasWork {
			t.Errorf("%+v: the user's branch ends with %q", tt, msg)
		}
	}
}

// Without a merge: block, merge_back: true merges the job branch into
// the user's branch with git merge; a job that fails merges nothing.
func TestRunInWorktreeMergeBack(t *testing.T) {
	r := testkit.GitCheckout(t, map[string]string{"f.txt": "base\n"})
	git, repo := r.In, r.Dir
	j := startStandard(t, "commands:\n  - shell: echo w > w.txt && git add w.txt && git commit -qm work\nmerge_back: true\n")
	_, end, err := j.RunInWorktree(t.Context(), workspace.Ending{Merge: true})
	if err != nil || end.Merged != workspace.MergedByGit {
		t.Fatalf("RunInWorktree = %+v, %v", end, err)
	}
	if msg := git(repo, "log", "-1", "--format=%s", "main"); msg != "Merge runner/s (runner job s)" {
		t.Errorf("the user's branch ends with %q", msg)
	}

	r = testkit.GitCheckout(t, map[string]string{"f.txt": "base\n"})
	git, repo = r.In, r.Dir
	j = startStandard(t, "commands:\n  - shell: echo w > w.txt && git add w.txt && git commit -qm work && false\nmerge_back: true\n")
	_, end, err = j.RunInWorktree(t.Context(), workspace.Ending{Merge: true})
	if err == nil || end.Merged != "" {
		t.Fatalf("RunInWorktree of a failing job = %+v, %v", end, err)
	}
	if msg := git(repo, "log", "-1", "--format=%s", "main"); msg != "base" {
		t.Errorf("the user's branch moved to %q", msg)
	}
}
