package proc

import (
	"sync"
	"syscall"
	"time"
)

// reapWait bounds how long Run waits, after the group's SIGKILL, for its
// last members to disappear (a process in uninterruptible sleep dies only
// when its system call returns).
const reapWait = time.Second

// group is a run's shell and the process group it leads.
//
// The shell's pid is only reused once Run has reaped it, and the group id
// stays reserved by the kernel as long as any member is alive, so signals
// sent under mu while the shell is not reaped always reach the right
// processes; a group signal after the reap can only reach members the shell
// left behind (or nobody: ESRCH). Once Run returns the group is empty (or
// given up on) and nothing signals it any more.
type group struct {
	pid   int
	grace time.Duration

	mu          sync.Mutex
	reaped      bool
	interrupted bool        // interrupt signalled the group before the reap
	done        bool        // Run is returning: no more signals
	termAt      time.Time   // when the group first got SIGTERM
	killTimer   *time.Timer // pending SIGKILL, armed by the first successful terminate
}

// interrupt terminates the group because the run's context is done (a
// timeout or a cancellation). It is a no-op once the shell is reaped.
func (g *group) interrupt() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.reaped && g.terminateLocked() {
		g.interrupted = true
	}
}

// wasInterrupted reports whether interrupt signalled the group.
func (g *group) wasInterrupted() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.interrupted
}

// reap collects the shell's exit status if it has exited (WNOHANG), and
// reports whether it did.
func (g *group) reap() (ws syscall.WaitStatus, done bool, err error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for {
		pid, err := syscall.Wait4(g.pid, &ws, syscall.WNOHANG, nil)
		switch {
		case err == syscall.EINTR:
			continue
		case err != nil: // ECHILD: someone else reaped it; nothing left to wait for
			g.reaped = true
			return ws, true, err
		case pid == g.pid:
			g.reaped = true
			return ws, true, nil
		}
		return ws, false, nil
	}
}

// terminateLeftovers terminates what the shell left in its group after it
// exited. It reports whether anything was left.
func (g *group) terminateLeftovers() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.terminateLocked()
}

// settled reports whether Run may stop waiting for the shell's leftovers:
// no member of the group runs any more, or one outlived its SIGKILL by
// reapWait. Members still there after the grace get SIGKILL (again: the
// timer's may have missed one forked since).
func (g *group) settled() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !groupAlive(g.pid) {
		return true
	}
	since := time.Since(g.termAt)
	if since >= g.grace {
		g.killLocked()
	}
	return since >= g.grace+reapWait
}

// finish stops every signal still pending for the group: Run is returning.
func (g *group) finish() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.done = true
	if g.killTimer != nil {
		g.killTimer.Stop()
	}
}

// terminateLocked sends SIGTERM (then SIGCONT, so stopped members can act
// on it) to the group and arms a SIGKILL for grace later. It reports
// whether the group had any member left to signal.
func (g *group) terminateLocked() bool {
	if err := syscall.Kill(-g.pid, syscall.SIGTERM); err != nil {
		return false // ESRCH: the group is empty
	}
	_ = syscall.Kill(-g.pid, syscall.SIGCONT)
	if g.killTimer == nil {
		g.termAt = time.Now()
		g.killTimer = time.AfterFunc(g.grace, g.kill)
	}
	return true
}

// kill is the timer's SIGKILL: it reaches a shell that ignores SIGTERM
// while Run is still waiting for it to exit.
func (g *group) kill() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.done {
		g.killLocked()
	}
}

// killLocked sends SIGKILL to the group and, should the shell itself have
// left it, to the shell.
func (g *group) killLocked() {
	// ESRCH (everything already exited) is the common, fine case.
	_ = syscall.Kill(-g.pid, syscall.SIGKILL)
	if !g.reaped {
		_ = syscall.Kill(g.pid, syscall.SIGKILL)
	}
}
