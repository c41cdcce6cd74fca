package proc

import (
	"fmt"
	"syscall"
	"time"
)

// EndGroup ends what is left of process group pgid, which a process that
// died had started (Run with a GroupHook) while its leader, with start
// time start (StartTime), ran: the group's members get SIGTERM (git
// removes its lock files on it), then SIGKILL after DefaultGrace, and
// EndGroup returns once none runs, or with an error naming the group if
// some still run after wait more. A leader that runs with another start
// time is a later process that reused the pid: the old group is gone then
// (a pid is not reused while a group has its id), and nothing is
// signalled.
func EndGroup(pgid int, start uint64, wait time.Duration) error {
	if pgid <= 1 || pgid == syscall.Getpgrp() {
		return nil // not a group Run started (kill(2) would take -1 and -0 as every process, and this group)
	}
	if now, ok := StartTime(pgid); ok && now != start {
		return nil
	}
	if syscall.Kill(-pgid, syscall.SIGTERM) == syscall.ESRCH {
		return nil
	}
	_ = syscall.Kill(-pgid, syscall.SIGCONT)
	if awaitGroup(pgid, DefaultGrace) {
		return nil
	}
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	if awaitGroup(pgid, wait) {
		return nil
	}
	return fmt.Errorf("process group %d, left by a runner process that died, still runs %s after SIGKILL", pgid, wait)
}

// awaitGroup waits up to d for group pgid to have no member that runs.
func awaitGroup(pgid int, d time.Duration) bool {
	for deadline := time.Now().Add(d); groupAlive(pgid); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			return false
		}
	}
	return true
}

// AwaitExit waits up to d for process pid, started at start, to have
// exited (Runs false), and reports whether it has. A process killed with
// -9 lets go of its files (its flocks) a moment before it has exited and
// its children have had their parent-death signal.
func AwaitExit(pid int, start uint64, d time.Duration) bool {
	for deadline := time.Now().Add(d); Runs(pid, start); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			return false
		}
	}
	return true
}
