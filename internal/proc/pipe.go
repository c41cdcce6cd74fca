package proc

import "syscall"

// closeFDs closes raw descriptors, ignoring errors.
func closeFDs(fds ...int) {
	for _, fd := range fds {
		if fd >= 0 {
			_ = syscall.Close(fd)
		}
	}
}
