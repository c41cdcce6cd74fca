package mapreduce_test

import (
	"testing"

	"github.com/runnerdev/runner/internal/dispatchtest"
	"github.com/runnerdev/runner/internal/itemtask"
	"github.com/runnerdev/runner/internal/job"
	"github.com/runnerdev/runner/mapreduce"
)

// Items run in this process (InProcess) honour the item seam's contract.
func TestInProcessConformance(t *testing.T) {
	dispatchtest.Run(t, dispatchtest.Subject{Backend: func(*testing.T, *job.Job) itemtask.Backend {
		return mapreduce.InProcess(nil)
	}})
}
