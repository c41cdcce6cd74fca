package mapreduce_test

import (
	"testing"

	"github.com/runnerdev/runner/internal/dispatchtest"
	"github.com/runnerdev/runner/internal/itemrun"
	"github.com/runnerdev/runner/internal/itemtask"
	"github.com/runnerdev/runner/internal/job"
	"github.com/runnerdev/runner/internal/workspace"
)

// Local dispatch honours the item seam's contract.
func TestLocalConformance(t *testing.T) {
	dispatchtest.Run(t, dispatchtest.Subject{Backend: func(t *testing.T, j *job.Job) itemtask.Backend {
		refs := workspace.JobRefs{ID: j.ID(), ItemBranches: j.Meta().ItemBranches}
		trees, err := workspace.OpenWorktrees(t.Context(), refs, j.Workflow().Map, j.Executor().Env, j.Layout())
		if err != nil {
			t.Fatal(err)
		}
		return itemrun.Local(itemrun.NewRunner(j.Executor(), j.Scope(), j.Workflow().Map, j.Layout(), trees, nil))
	}})
}
