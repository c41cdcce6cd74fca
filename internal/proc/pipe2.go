//go:build dragonfly || freebsd || illumos || linux || netbsd || openbsd || solaris

package proc

import "golang.org/x/sys/unix"

// pipe returns a pipe's read and write ends as close-on-exec descriptors in
// blocking mode: Run's poll loop reads the one, the child inherits the
// other as stdout or stderr. pipe2 sets close-on-exec atomically, so no
// syscall.ForkLock is taken: forks of concurrent runs are not serialised
// behind it.
func pipe() (r, w int, err error) {
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		return -1, -1, err
	}
	return p[0], p[1], nil
}
