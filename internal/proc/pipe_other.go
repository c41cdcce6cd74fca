//go:build !(dragonfly || freebsd || illumos || linux || netbsd || openbsd || solaris)

package proc

import "syscall"

// pipe returns a pipe's read and write ends as close-on-exec descriptors in
// blocking mode. Without pipe2, ForkLock keeps a concurrent ForkExec from
// inheriting the pair before close-on-exec is set.
func pipe() (r, w int, err error) {
	var p [2]int
	syscall.ForkLock.RLock()
	defer syscall.ForkLock.RUnlock()
	if err := syscall.Pipe(p[:]); err != nil {
		return -1, -1, err
	}
	syscall.CloseOnExec(p[0])
	syscall.CloseOnExec(p[1])
	return p[0], p[1], nil
}
