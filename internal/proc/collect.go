package proc

import (
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Bounds of the interval at which collect checks for the shell's exit
// when it has no pidfd to wait on.
const (
	firstExitCheck = time.Millisecond
	maxExitCheck   = 100 * time.Millisecond
)

// collect feeds the shell's output to its streams until the shell has
// exited and both pipes reached EOF, and returns the shell's wait status.
// It is one poll(2) loop in the caller's goroutine: no goroutine handoff
// stands between a read and the next, or between the exit and the return.
//
// The exit is seen through pidfd when there is one (Linux); otherwise the
// loop checks with WNOHANG, at once when the pipes close and at growing
// intervals while something holds them open. Once the shell is reaped,
// whatever it left in its group is terminated and the loop goes on, checking
// at growing intervals, until the group is empty (SIGKILL after the grace;
// see group.settled); then the pipes get pipeWait more to reach EOF before
// they are closed: a process that escaped the group while holding them
// cannot hang the run.
func collect(g *group, pidfd int, out, errs *stream) (ws syscall.WaitStatus, waitErr error) {
	bp := readBufs.Get().(*[]byte)
	defer readBufs.Put(bp)
	streams := [2]*stream{out, errs}
	fds := [3]unix.PollFd{
		{Fd: int32(out.fd), Events: unix.POLLIN},
		{Fd: int32(errs.fd), Events: unix.POLLIN},
		{Fd: int32(pidfd), Events: unix.POLLIN}, // ignored by poll when -1
	}
	exited, empty := false, false // the shell was reaped; so was its group
	var pipeDeadline, settleAt time.Time
	check := firstExitCheck
	for {
		pipesOpen := fds[0].Fd >= 0 || fds[1].Fd >= 0
		timeout := -1
		switch {
		case empty && !pipesOpen:
			return ws, waitErr
		case empty:
			left := time.Until(pipeDeadline)
			if left <= 0 {
				out.close()
				errs.close()
				return ws, waitErr
			}
			timeout = ceilMillis(left)
		case exited || pidfd < 0:
			timeout = ceilMillis(check)
			check = min(2*check, maxExitCheck)
		}
		if _, err := unix.Poll(fds[:], timeout); err != nil && err != unix.EINTR {
			time.Sleep(firstExitCheck) // cannot happen with valid fds; never spin
		}
		for i, s := range streams {
			if fds[i].Fd >= 0 && fds[i].Revents != 0 && !s.read(*bp) {
				s.close()
				fds[i].Fd = -1
			}
		}
		if fds[2].Revents&(unix.POLLERR|unix.POLLNVAL) != 0 {
			pidfd, fds[2].Fd = -1, -1 // a pidfd poll cannot use: check as without one
		}
		switch {
		case exited:
			// A leftover that keeps writing wakes the loop often: look at
			// the group (a scan of /proc) only at the check intervals.
			if now := time.Now(); !empty && !now.Before(settleAt) {
				empty, settleAt = g.settled(), now.Add(check)
			}
		case pidfd >= 0 && fds[2].Revents == 0:
			continue
		default:
			var done bool
			if ws, done, waitErr = g.reap(); done {
				exited, empty = true, !g.terminateLeftovers()
				fds[2].Fd = -1
				check = firstExitCheck
			}
		}
		if empty && pipeDeadline.IsZero() {
			pipeDeadline = time.Now().Add(pipeWait)
		}
	}
}

// ceilMillis is d in whole milliseconds, rounded up, for poll(2).
func ceilMillis(d time.Duration) int {
	return int((d + time.Millisecond - 1) / time.Millisecond)
}
