package itemrun

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/runnerdev/runner/internal/eventlog"
	"github.com/runnerdev/runner/internal/itemtask"
)

// A task sent again with checkpoints to a worker whose clone has no
// worktree of the item (its first run was on another worker) starts over:
// the saved steps' commits are not in the fresh worktree, so skipping
// them would run the later steps on work that is not there. The branch
// the run makes is the one Opened.Branch names before it.
func TestResumedItemInFreshWorktreeStartsOver(t *testing.T) {
	repo := t.TempDir()
	git := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir = repo
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	git("init", "-q", "-b", "main")
	git("commit", "-q", "--allow-empty", "-m", "init")
	tip := git("rev-parse", "HEAD")
	t.Chdir(repo)
	t.Setenv("GIT_AUTHOR_NAME", "t")
	t.Setenv("GIT_AUTHOR_EMAIL", "t@t")
	t.Setenv("GIT_COMMITTER_NAME", "t")
	t.Setenv("GIT_COMMITTER_EMAIL", "t@t")

	src := "mode: mapreduce\nmap:\n  input: seq 1 1\n  isolation: worktree\n  agent_template:\n" +
		"    - shell: echo made > first && git add first && git commit -qm first\n" +
		"    - shell: test -f first\n"
	portable := portableJob(t, src, filepath.Join(t.TempDir(), "state"))
	opened, err := OpenPortable(t.Context(), portable, filepath.Join(t.TempDir(), "worker"), "w1", func(eventlog.Event) {}, nil)
	if err != nil {
		t.Fatal(err)
	}
	task := itemtask.Task{
		JobID: "w", Index: 0, ItemID: "item 0/x", Item: json.RawMessage(`"1"`), Attempt: 1, DispatchID: "d1", Tip: tip,
		Checkpoints: []itemtask.StepRecord{{Index: 0, Key: "step-1", Status: "succeeded"}},
	}
	var ran []int
	out, err := opened.Runner.Run(t.Context(), task, freeSlot{}, func(rec itemtask.StepRecord) error {
		ran = append(ran, rec.Index)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if out.Failed {
		t.Fatalf("the item failed: %+v (steps saved: %v)", out.Failure, ran)
	}
	if len(ran) == 0 || ran[0] != 0 {
		t.Errorf("steps saved %v: want the first step run again", ran)
	}
	// The worker notes the branch before the run (itemtask.Opened.Branch).
	if named := opened.Branch(task); named != out.Branch || named == "" {
		t.Errorf("Opened.Branch named %q before the run, which made %q", named, out.Branch)
	}
}

// freeSlot is a slot always free.
type freeSlot struct{}

func (freeSlot) Acquire(context.Context) error { return nil }
func (freeSlot) Release()                      {}
