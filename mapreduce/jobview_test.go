package mapreduce

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/runnerdev/runner/internal/gitwork"
	"github.com/runnerdev/runner/internal/itemtask"
	"github.com/runnerdev/runner/retryv2"
)

// The dispatcher of a job whose items run in worktrees reads the job
// branch's tip from the job's Repo, which follows each move of the job
// branch the job makes (an item's merge): the second item starts from the
// first one's merge.
func TestDispatcherSeesTheJobBranchMove(t *testing.T) {
	gitRepo(t)
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	git := gitwork.Git{Dir: dir}
	j := startSource(t, dir, "mode: mapreduce\nmap:\n  input: seq 1 2\n  max_parallel: 1\n  isolation: worktree\n  agent_template: [{shell: 'true'}]\n")
	var tips []string
	backend := itemtask.Backend{Can: itemtask.Capabilities{Worktrees: true}, Open: func(_ context.Context, job itemtask.Job, h itemtask.Host) (itemtask.Dispatcher, error) {
		repo := job.Repo()
		commit := agentFunc(func(ctx context.Context, it *Item, _ int, _ retryv2.Slot) itemtask.Outcome {
			if repo == nil {
				return failed("the dispatcher has no Repo")
			}
			tip, err := repo.Tip(ctx)
			if err != nil {
				return failed(err.Error())
			}
			tips = append(tips, tip)
			return itemtask.Outcome{Branch: commitOnItemBranch(t, git, tip, it)}
		})
		return funcDispatcher{commit, h}, nil
	}}
	sum, err := Run(t.Context(), j, Options{DLQ: newFakeDLQ(), Dispatcher: backend})
	if err != nil || sum.Items.Succeeded != 2 {
		t.Fatalf("Run = %+v, %v; want 2 items succeeded", sum.Items, err)
	}
	if len(tips) != 2 || tips[1] == tips[0] {
		t.Errorf("tips read at each item's dispatch: %v, want the second after the first's merge", tips)
	}
	if merged, _ := git.Output(t.Context(), "log", "-1", "--format=%s", tips[1]); !strings.HasPrefix(merged, "Merge ") {
		t.Errorf("the second item's tip is %q, want the first item's merge", merged)
	}
}

// commitOnItemBranch makes item it's branch, one commit past tip, as a
// worker's run would, and returns its name.
func commitOnItemBranch(t *testing.T, git gitwork.Git, tip string, it *Item) string {
	t.Helper()
	commit, err := git.Output(t.Context(), "commit-tree", "-m", it.ID, "-p", tip, tip+"^{tree}")
	if err != nil {
		t.Error(err)
	}
	branch := "runner-items/w/" + it.ID
	if err := git.SetRef(t.Context(), "refs/heads/"+branch, commit); err != nil {
		t.Error(err)
	}
	return branch
}
