package jobenv

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
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
	pgid := waitForPID(t, pidFile, done)
	cancel()
	var err error
	select {
	case err = <-done:
	case <-time.After(2 * time.Minute): // only so that a broken cancel cannot hang the test
		t.Fatal("Resolve did not return after its context was cancelled")
	}
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Resolve: %v, want the context's cancel", err)
	}
	// Its members are dead when Resolve returns; pid 1 reaps them when it
	// gets to it (some inits once a second), and then the group is gone.
	for deadline := time.Now().Add(time.Minute); syscall.Kill(-pgid, 0) != syscall.ESRCH; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the env command's process group %d is still there a minute after Resolve returned", pgid)
		}
	}
}

// waitForPID waits until the file at path holds a pid and returns it; it
// fails if Resolve returns first (done).
func waitForPID(t *testing.T, path string, done <-chan error) int {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); {
		if data, err := os.ReadFile(path); err == nil {
			pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
			if err != nil {
				t.Fatal(err)
			}
			return pid
		}
		select {
		case err := <-done:
			t.Fatalf("Resolve returned before its command started: %v", err)
		case <-time.After(10 * time.Millisecond):
		}
	}
	t.Fatal("the env command never wrote its pid")
	return 0
}
