package natscoord

import (
	"os"
	"testing"

	"github.com/runnerdev/runner/internal/itemtask"
	"github.com/runnerdev/runner/internal/job"
	"github.com/runnerdev/runner/internal/natstest"
	"github.com/runnerdev/runner/mapreduce"
)

func TestMain(m *testing.M) {
	natstest.ServeIfChild() // a NATS server process that a test kills and restarts
	os.Exit(m.Run())
}

// viewOf is what the dispatcher of job j may read of it (mapreduce.View).
func viewOf(t *testing.T, j *job.Job) itemtask.Job {
	t.Helper()
	v, err := mapreduce.View(t.Context(), j)
	if err != nil {
		t.Fatal(err)
	}
	return v
}
