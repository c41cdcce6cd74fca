package jobenv

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/runnerdev/runner/internal/proctest"
	"github.com/runnerdev/runner/internal/testkit"
)

// An env command ends with the caller's context: Resolve returns the
// cancel (not CommandTimeout's error, a minute later) and the command's
// process group is gone.
func TestEnvCommandEndsWithContext(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "pid")
	// The shell's pid is its process group's id; it waits on a sleep of
	// its own so that the group has two members.
	wf := envWorkflow(t, `env:
  SLOW: {command: 'echo $$ > `+pidFile+`.new && mv `+pidFile+`.new `+pidFile+` && sleep 600'}
`, nil)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := Resolve(ctx, wf, Spec{}, []string{"PATH=" + os.Getenv("PATH")})
		done <- err
	}()
	pgid := proctest.AwaitPID(t, pidFile, proctest.Ended(done))
	cancel()
	var err error
	select {
	case err = <-done:
	case <-time.After(testkit.Scale(2 * time.Minute)): // only so that a broken cancel cannot hang the test
		t.Fatal("Resolve did not return after its context was cancelled")
	}
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Resolve: %v, want the context's cancel", err)
	}
	proctest.AwaitGroupGone(t, pgid)
}
