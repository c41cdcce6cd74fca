// Package proctest watches, for tests, the processes a shell command
// starts: it waits for the pid a command writes (AwaitPID) and for its
// process group to be gone (AwaitGroupGone), so that a test observes a
// kill instead of sleeping a fixed time.
//
//	pid := proctest.AwaitPID(t, pidFile, proctest.Ended(done))
//	cancel()
//	<-done
//	proctest.AwaitGroupGone(t, pid)
package proctest

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/runnerdev/runner/internal/testkit"
)

// deadline bounds each wait: a handshake with a process, not a timing.
var deadline = testkit.Scale(testkit.Wait)

// AwaitPID waits for a command to write its pid and a newline to path
// (`echo $$ > FILE`) and returns it. ended reports, without blocking,
// that what runs the command ended before it wrote, with what it said;
// the test then fails.
func AwaitPID(t testing.TB, path string, ended func() (string, bool)) int {
	t.Helper()
	for end := time.Now().Add(deadline); time.Now().Before(end); time.Sleep(5 * time.Millisecond) {
		if said, ok := ended(); ok {
			t.Fatalf("it ended (%s) before its command wrote its pid", said)
		}
		data, err := os.ReadFile(path)
		if err != nil || !strings.HasSuffix(string(data), "\n") {
			continue
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
		if err != nil {
			t.Fatal(err)
		}
		return pid
	}
	t.Fatalf("no command wrote its pid to %s within %s", path, deadline)
	return 0
}

// Ended is AwaitPID's ended for a run that sends its end on done.
func Ended[T any](done <-chan T) func() (string, bool) {
	return func() (string, bool) {
		select {
		case v := <-done:
			return fmt.Sprint(v), true
		default:
			return "", false
		}
	}
}

// AwaitGroupGone waits for process group pgid to be gone: its members
// dead and reaped (pid 1 reaps orphans when it gets to it, some inits once
// a second).
func AwaitGroupGone(t testing.TB, pgid int) {
	t.Helper()
	for end := time.Now().Add(deadline); syscall.Kill(-pgid, 0) != syscall.ESRCH; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("process group %d is still there %s later", pgid, deadline)
		}
	}
}
