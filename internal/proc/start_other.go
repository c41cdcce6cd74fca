//go:build !linux

package proc

import (
	"syscall"
	"time"
)

// StartTime is not known on this system: ok is always false, and callers
// fall back to whether the pid exists.
func StartTime(pid int) (ticks uint64, ok bool) { return 0, false }

// StartedAt is not known either.
func StartedAt(ticks uint64) (time.Time, bool) { return time.Time{}, false }

// Runs reports whether process pid runs: start times are not known here,
// so any process with that pid counts.
func Runs(pid int, start uint64) bool { return syscall.Kill(pid, 0) != syscall.ESRCH }

// dieWithParent does nothing: the parent-death signal is Linux's.
func dieWithParent(*syscall.SysProcAttr) {}
