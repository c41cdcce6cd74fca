package natsworker

import (
	"fmt"
	"io"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/runnerdev/runner/internal/testkit"
)

// sleeper starts a process in a group of its own and returns it; it is
// killed when the test ends.
func sleeper(t *testing.T) *exec.Cmd {
	cmd := exec.Command("sleep", "30")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	return cmd
}

// ended reports whether cmd ended within d.
func ended(cmd *exec.Cmd, d time.Duration) bool {
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	select {
	case <-done:
		return true
	case <-time.After(d):
		return false
	}
}

// The watchdog kills a group whose lease ran out, leaves a freed one
// alone, and kills the groups still leased when its input ends (the
// worker died).
func TestWatchdogKillsGroupsWhoseLeaseRanOut(t *testing.T) {
	t.Parallel()
	r, w := io.Pipe()
	marks := t.TempDir()
	served := make(chan error, 1)
	go func() { served <- ServeWatchdog(r, marks) }()
	expiring, freed, orphan := sleeper(t), sleeper(t), sleeper(t)
	soon, later := time.Now().Add(100*time.Millisecond), time.Now().Add(time.Hour)
	fmt.Fprintf(w, "lease %d %d\n", expiring.Process.Pid, soon.UnixNano())
	fmt.Fprintf(w, "lease %d %d\nfree %d\n", freed.Process.Pid, soon.UnixNano(), freed.Process.Pid)
	fmt.Fprintf(w, "lease %d %d\n", orphan.Process.Pid, later.UnixNano())
	if !ended(expiring, testkit.Scale(5*time.Second)) {
		t.Error("the group whose lease ran out is alive after 5s")
	}
	if ended(freed, 300*time.Millisecond) {
		t.Error("a freed group was killed")
	}
	wd := &watchdog{marks: marks}
	if !wd.killed(expiring.Process.Pid) {
		t.Error("the group killed has no mark")
	}
	if wd.killed(freed.Process.Pid) {
		t.Error("the group freed has a mark")
	}
	w.Close()
	if !ended(orphan, testkit.Scale(5*time.Second)) {
		t.Error("a group still leased when the worker went is alive after 5s")
	}
	if err := <-served; err != nil {
		t.Error(err)
	}
}

// A lease ends once an answer comes after it ran out (a frozen worker
// thawing), and then renews nothing.
func TestLeaseEndsForGood(t *testing.T) {
	start := time.Now()
	l := newLease(nil, time.Second, start)
	l.renew(start.Add(500*time.Millisecond), start.Add(500*time.Millisecond))
	if l.expired(start.Add(1400 * time.Millisecond)) {
		t.Fatal("an answered heartbeat did not renew the lease")
	}
	l.renew(start.Add(1400*time.Millisecond), start.Add(3*time.Second)) // answered after the lease ran out at 1.5s
	if !l.expired(start.Add(3 * time.Second)) {
		t.Error("a late answer renewed a lease that had run out")
	}
	l.renew(start.Add(3100*time.Millisecond), start.Add(3100*time.Millisecond))
	if !l.expired(start.Add(3100 * time.Millisecond)) {
		t.Error("an ended lease came back")
	}
}

// A lease runs from the sending of the heartbeat the server answered, not
// from the answer: the server's ack_wait clock restarted when the
// heartbeat reached it, and a loaded worker may read the answer late.
func TestLeaseRunsFromTheHeartbeatsSending(t *testing.T) {
	start := time.Now()
	l := newLease(nil, time.Second, start)
	l.renew(start.Add(200*time.Millisecond), start.Add(900*time.Millisecond))
	if !l.expired(start.Add(1250 * time.Millisecond)) {
		t.Error("a heartbeat sent at 0.2s and answered at 0.9s kept a lease of 1s after 1.25s")
	}
}

// A heartbeat answered just before the lease's end, but renewing it only
// after the watchdog killed one of the run's groups at that end, leaves
// the lease ended: the run was cut off and sends no result (the
// TestNATSGitServerCrash failure: a `git bundle` killed by the watchdog
// reported as a transfer failure, the item sent to the DLQ).
func TestLeaseEndsWhenItsWatchdogKilledAGroup(t *testing.T) {
	t.Parallel()
	r, w := io.Pipe()
	served := make(chan error, 1)
	marks := t.TempDir()
	go func() { served <- ServeWatchdog(r, marks) }()
	start := time.Now()
	limit := 200 * time.Millisecond
	l := newLease(&watchdog{in: w, marks: marks}, limit, start)
	git := sleeper(t)
	done := l.hook(git.Process.Pid)
	if !ended(git, testkit.Scale(5*time.Second)) {
		t.Fatal("the watchdog did not kill the group whose lease ran out")
	}
	// The answer came 10 ms before the end: the watchdog had not read the
	// renewal when its timer fired.
	if !l.renew(start.Add(limit-50*time.Millisecond), start.Add(limit-10*time.Millisecond)) {
		t.Fatal("an answer in time did not renew the lease before the run saw its group end")
	}
	done()
	if !l.expired(start.Add(limit + 10*time.Millisecond)) {
		t.Error("the lease goes on after the watchdog killed a group of its run")
	}
	if l.renew(start.Add(limit), start.Add(limit)) {
		t.Error("an ended lease came back")
	}
	w.Close()
	if err := <-served; err != nil {
		t.Error(err)
	}
}
