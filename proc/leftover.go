package proc

import (
	"fmt"
	"syscall"
	"time"
)

// EndGroup ends what is left of process group pgid, which a process that
// died had started (Run with a GroupHook) while its leader, with start
// time start (StartTime), ran: the group's members get SIGKILL, and
// EndGroup returns once none runs, or with an error naming the group if
// some still run after wait. A leader that runs with another start time
// is a later process that reused the pid: the old group is gone then (a
// pid is not reused while a group has its id), and nothing is signalled.
func EndGroup(pgid int, start uint64, wait time.Duration) error {
	if pgid <= 1 || pgid == syscall.Getpgrp() {
		return nil // not a group Run started (kill(2) would take -1 and -0 as every process, and this group)
	}
	if now, ok := StartTime(pgid); ok && now != start {
		return nil
	}
	if syscall.Kill(-pgid, syscall.SIGKILL) == syscall.ESRCH {
		return nil
	}
	deadline := time.Now().Add(wait)
	for groupAlive(pgid) {
		if time.Now().After(deadline) {
			return fmt.Errorf("process group %d, left by a runner process that died, still runs %s after SIGKILL", pgid, wait)
		}
		_ = syscall.Kill(-pgid, syscall.SIGKILL) // a member forked since
		time.Sleep(10 * time.Millisecond)
	}
	return nil
}
