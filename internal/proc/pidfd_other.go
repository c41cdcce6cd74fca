//go:build !linux

package proc

import "syscall"

// requestPidFD leaves *fd at -1: only Linux has pidfds.
func requestPidFD(*syscall.SysProcAttr, *int) {}
