package proc

import (
	"syscall"
	"time"
)

// group signals the process group led by a run's shell.
//
// The group id stays reserved by the kernel as long as any member is alive
// (even after the shell itself has been reaped), so signalling it after the
// shell exited cannot reach an unrelated process group in practice.
//
// terminate may be called from exec's context-watching goroutine (via
// Cmd.Cancel) and later from Run's goroutine; exec guarantees the former
// finishes before Cmd.Wait returns, so no locking is needed.
type group struct {
	grace time.Duration
	timer *time.Timer // pending SIGKILL, armed by the first successful terminate
}

// terminate sends SIGTERM (then SIGCONT, so stopped members can act on it)
// to process group pgid and arms a SIGKILL for grace later. It reports
// whether the group had any member left to signal.
func (g *group) terminate(pgid int) bool {
	if pgid <= 0 {
		return false
	}
	if err := syscall.Kill(-pgid, syscall.SIGTERM); err != nil {
		return false // ESRCH: the group is empty
	}
	_ = syscall.Kill(-pgid, syscall.SIGCONT)
	if g.timer == nil {
		g.timer = time.AfterFunc(g.grace, func() {
			// ESRCH (everything already exited) is the common, fine case.
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
		})
	}
	return true
}

// disarm cancels a pending SIGKILL once the group is known to be empty.
func (g *group) disarm() {
	if g.timer != nil {
		g.timer.Stop()
	}
}
