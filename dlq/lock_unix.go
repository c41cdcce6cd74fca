//go:build linux || darwin || freebsd || openbsd || netbsd || dragonfly

package dlq

import (
	"os"
	"syscall"
)

// unlock drops bbolt's flock on f, which a leftover mmap of f would
// otherwise keep until the process exits.
func unlock(f *os.File) {
	_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
}
