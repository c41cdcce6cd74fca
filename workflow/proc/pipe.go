package proc

import "syscall"

// pipe returns a pipe's read and write ends as close-on-exec descriptors in
// blocking mode: Run's poll loop reads the one, the child inherits the
// other as stdout or stderr.
func pipe() (r, w int, err error) {
	var p [2]int
	// ForkLock keeps a concurrent ForkExec from inheriting the pair in the
	// moment before close-on-exec is set.
	syscall.ForkLock.RLock()
	defer syscall.ForkLock.RUnlock()
	if err := syscall.Pipe(p[:]); err != nil {
		return -1, -1, err
	}
	syscall.CloseOnExec(p[0])
	syscall.CloseOnExec(p[1])
	return p[0], p[1], nil
}

// closeFDs closes raw descriptors, ignoring errors.
func closeFDs(fds ...int) {
	for _, fd := range fds {
		if fd >= 0 {
			_ = syscall.Close(fd)
		}
	}
}
