package mapreduce

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/runnerdev/runner/internal/proctest"
	"github.com/runnerdev/runner/internal/testkit"
)

// A ${cmd:} in map.input runs under the run's context: cancelling the run
// ends it, and everything it started, at once.
func TestMapInputCommandVarEndsWithTheRun(t *testing.T) {
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "pid")
	j := startSource(t, dir, "mode: mapreduce\nmap:\n  input: '${cmd:echo $$ > "+pidFile+"; exec sleep 600}'\n  agent_template: [{shell: 'true'}]\n")
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := Run(ctx, j, Options{DLQ: newFakeDLQ(), Dispatcher: InProcess(nil)})
		done <- err
	}()

	pid := proctest.AwaitPID(t, pidFile, proctest.Ended(done))
	cancel()
	select {
	case err := <-done:
		if err == nil {
			t.Error("the run succeeded, though it was cancelled while its input command ran")
		}
	case <-time.After(testkit.Scale(time.Minute)):
		t.Fatal("the run still goes a minute after it was cancelled: map.input's ${cmd:} does not end with it")
	}
	proctest.AwaitGroupGone(t, pid)
}
