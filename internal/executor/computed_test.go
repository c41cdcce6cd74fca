package executor

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/runnerdev/runner/internal/proctest"
	"github.com/runnerdev/runner/internal/testkit"
	"github.com/runnerdev/runner/workflow"
)

// A ${cmd:COMMAND} runs under the step's context wherever the step reads
// it (its env, a write_file's content, its command): cancelling the run
// ends the command and its process group at once, not when the command
// ends or commandVarTimeout passes.
func TestCommandVarEndsWithTheRun(t *testing.T) {
	for name, step := range map[string]string{
		"env":        "- shell: 'true'\n  env:\n    X: '${cmd:CMD}'\n",
		"write_file": "- write_file:\n    path: out.txt\n    content: '${cmd:CMD}'\n",
		"shell":      "- shell: 'echo ${cmd:CMD}'\n",
	} {
		t.Run(name, func(t *testing.T) {
			pidFile := filepath.Join(t.TempDir(), "pid")
			wf, err := workflow.Parse("c.yml", []byte(strings.Replace(step, "CMD", "echo $$ > "+pidFile+"; exec sleep 600", 1)))
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			x := &Executor{Env: os.Environ(), TmpDir: t.TempDir()}
			done := make(chan StepResult, 1)
			go func() { done <- x.RunStep(ctx, wf.Steps[0], Run{Scope: NewScope(nil, os.Environ()), Dir: t.TempDir()}) }()

			pid := proctest.AwaitPID(t, pidFile, proctest.Ended(done))
			cancel()
			select {
			case res := <-done:
				if res.Status != StepFailed || !errors.Is(res.Err, context.Canceled) {
					t.Errorf("the step ended %s (%v), not failed with the run's cancel", res.Status, res.Err)
				}
			case <-time.After(testkit.Scale(time.Minute)):
				t.Fatal("the step still runs a minute after its run was cancelled: its ${cmd:} does not end with the run")
			}
			proctest.AwaitGroupGone(t, pid)
		})
	}
}
