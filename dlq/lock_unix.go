//go:build linux || darwin || freebsd || openbsd || netbsd || dragonfly

package dlq

import (
	"errors"
	"os"
	"syscall"
	"time"

	berrors "go.etcd.io/bbolt/errors"
)

// lock takes on f the flock that bbolt takes (exclusive for a writer,
// shared for a reader), trying every lockPoll for up to timeout (then
// bbolt's ErrTimeout); bbolt's own flock of f then succeeds at once.
// bbolt alone tries every 50 ms, too seldom to catch the short gaps a
// Writer leaves between its holds.
func lock(f *os.File, exclusive bool, timeout time.Duration) error {
	how := syscall.LOCK_SH
	if exclusive {
		how = syscall.LOCK_EX
	}
	deadline := time.Now().Add(timeout)
	for {
		err := syscall.Flock(int(f.Fd()), how|syscall.LOCK_NB)
		switch {
		case errors.Is(err, syscall.EINTR):
			continue
		case !errors.Is(err, syscall.EWOULDBLOCK):
			return err
		case time.Now().After(deadline):
			return berrors.ErrTimeout
		}
		time.Sleep(lockPoll)
	}
}

// unlock drops bbolt's flock on f, which a leftover mmap of f would
// otherwise keep until the process exits.
func unlock(f *os.File) {
	_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
}
