package proc

import "syscall"

// requestPidFD asks ForkExec for a pidfd of the child in *fd; the kernel
// leaves it -1 when it has none (before Linux 5.3).
func requestPidFD(sys *syscall.SysProcAttr, fd *int) { sys.PidFD = fd }
