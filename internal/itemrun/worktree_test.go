package itemrun

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/runnerdev/runner/internal/eventlog"
	"github.com/runnerdev/runner/internal/itemtask"
	"github.com/runnerdev/runner/internal/state"
	"github.com/runnerdev/runner/internal/testkit"
)

// A task sent again with checkpoints to a worker whose clone has no
// worktree of the item (its first run was on another worker) starts over:
// the saved steps' commits are not in the fresh worktree, so skipping
// them would run the later steps on work that is not there. The item's
// worktree and branch are in a clone of the worker's own, in its store:
// the repository it runs in (its --work-dir's) gets none.
func TestResumedItemInFreshWorktreeStartsOver(t *testing.T) {
	repo := testkit.GitCheckout(t, nil)
	tip := repo.Git("rev-parse", "HEAD")

	src := "mode: mapreduce\nmap:\n  input: seq 1 1\n  isolation: worktree\n  agent_template:\n" +
		"    - shell: echo made > first && git add first && git commit -qm first\n" +
		"    - shell: test -f first\n"
	portable := portableJob(t, src, filepath.Join(t.TempDir(), "state"))
	store := filepath.Join(t.TempDir(), "worker")
	opened, err := OpenPortable(t.Context(), portable, store, "w1", func(eventlog.Event) {}, nil)
	if err != nil {
		t.Fatal(err)
	}
	task := itemtask.Task{
		JobID: "w", Index: 0, ItemID: "item 0/x", Item: json.RawMessage(`"1"`), Attempt: 1, DispatchID: "d1", Tip: tip,
		Checkpoints: []state.StepRecord{{Index: 0, Key: "step-1", Status: "succeeded"}},
	}
	var ran []int
	out, err := opened.Runner.Run(t.Context(), task, freeSlot{}, func(rec state.StepRecord) error {
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
	if !strings.HasPrefix(out.Worktree, store+string(filepath.Separator)) {
		t.Errorf("the item's worktree %s is not in the worker's store %s", out.Worktree, store)
	}
	if b := repo.Git("branch", "--format=%(refname:short)"); b != "main" || out.Branch == "" {
		t.Errorf("the run made branch %q; the --work-dir's repository has %q, want main alone", out.Branch, b)
	}
	if n := strings.Count(repo.Git("worktree", "list", "--porcelain"), "worktree "); n != 1 {
		t.Errorf("the --work-dir's repository has %d worktrees, want its own alone", n)
	}
	if err := opened.Git.Discard(t.Context(), task); err != nil {
		t.Error(err)
	}
}

// freeSlot is a slot always free.
type freeSlot struct{}

func (freeSlot) Acquire(context.Context) error { return nil }
func (freeSlot) Release()                      {}
