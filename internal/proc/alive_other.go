//go:build !linux

package proc

import "syscall"

// groupAlive reports whether process group pgid has members. Zombies
// count: without /proc they cannot be told apart.
func groupAlive(pgid int) bool { return syscall.Kill(-pgid, 0) != syscall.ESRCH }
