package mapreduce_test

import (
	"testing"

	"github.com/runnerdev/runner/internal/dispatchtest"
	"github.com/runnerdev/runner/internal/itemrun"
	"github.com/runnerdev/runner/internal/itemtask"
	"github.com/runnerdev/runner/internal/job"
)

// Local dispatch honours the item seam's contract.
func TestLocalConformance(t *testing.T) {
	dispatchtest.Run(t, dispatchtest.Subject{Backend: func(t *testing.T, j *job.Job) itemtask.Backend {
		return itemrun.Local(itemrun.NewRunner(j.Executor(), j.Scope(), j.Workflow().Map, j.State().ItemLogPath, nil, nil))
	}})
}
