package mapreduce

import (
	"context"
	"os"
	"testing"

	"github.com/runnerdev/runner/internal/gitwork"
	"github.com/runnerdev/runner/internal/itemtask"
	"github.com/runnerdev/runner/retryv2"
)

// The dispatcher of a job whose items run in worktrees is told of each
// move of the job branch the job makes (an item's merge): until the next
// one, a tip it read is the tip still (itemtask.Repo.Moves).
func TestDispatcherCountsTheJobBranchMoves(t *testing.T) {
	gitRepo(t)
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	git := gitwork.Git{Dir: dir}
	j := startSource(t, dir, "mode: mapreduce\nmap:\n  input: seq 1 2\n  max_parallel: 1\n  isolation: worktree\n  agent_template: [{shell: 'true'}]\n")
	var moves []uint64
	backend := itemtask.Backend{Can: itemtask.Capabilities{Worktrees: true}, Open: func(_ context.Context, job itemtask.Job, h Host) (Dispatcher, error) {
		repo := job.Repo()
		commit := agentFunc(func(ctx context.Context, it *Item, _ int, _ retryv2.Slot) Outcome {
			if repo.Moves == nil {
				return failed("the dispatcher is not told of the job branch's moves")
			}
			moves = append(moves, repo.Moves())
			return Outcome{Branch: commitOnItemBranch(t, git, repo, it)}
		})
		return funcDispatcher{commit, h}, nil
	}}
	sum, err := Run(t.Context(), j, Options{DLQ: newFakeDLQ(), Dispatcher: backend})
	if err != nil || sum.Items.Succeeded != 2 {
		t.Fatalf("Run = %+v, %v; want 2 items succeeded", sum.Items, err)
	}
	if len(moves) != 2 || moves[1] <= moves[0] {
		t.Errorf("moves counted at each item's dispatch: %v, want more at the second, after the first's merge", moves)
	}
}

// commitOnItemBranch makes item it's branch, one commit past the job
// branch's tip, as a worker's run would, and returns its name.
func commitOnItemBranch(t *testing.T, git gitwork.Git, repo itemtask.Repo, it *Item) string {
	t.Helper()
	tip, err := git.Tip(t.Context(), repo.JobBranch)
	if err != nil {
		t.Error(err)
	}
	commit, err := git.Output(t.Context(), "commit-tree", "-m", it.ID, "-p", tip, tip+"^{tree}")
	if err != nil {
		t.Error(err)
	}
	branch := repo.ItemBranches + it.ID
	if err := git.SetRef(t.Context(), "refs/heads/"+branch, commit); err != nil {
		t.Error(err)
	}
	return branch
}
