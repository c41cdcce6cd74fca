package agentproc

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/runnerdev/runner/internal/dispatchtest"
	"github.com/runnerdev/runner/internal/itemtask"
	"github.com/runnerdev/runner/internal/job"
)

// A pool of agents (this test binary as `runner agent`, see helperAgent)
// honours the item seam's contract; a step that kills its agent loses
// its runner.
func TestPoolConformance(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dispatchtest.Run(t, dispatchtest.Subject{
		Backend: func(t *testing.T, j *job.Job) itemtask.Backend {
			env := append(os.Environ(), helperEnv+"=job", helperJobEnv+"="+filepath.Join(filepath.Dir(filepath.Dir(j.Layout().Dir)), j.ID()), raceNoExitSleep())
			return New(Config{Command: []string{exe}, Env: env, Stderr: os.Stderr})
		},
		Lose:   "kill -9 $PPID",
		Frames: "github.com/runnerdev/runner/internal/agentproc.(*",
	})
}
