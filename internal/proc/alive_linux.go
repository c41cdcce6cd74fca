package proc

import (
	"bytes"
	"os"
	"strconv"
	"syscall"
)

// groupAlive reports whether any member of process group pgid still runs.
// A zombie does not count: it has exited, and it stays until its new parent
// (pid 1) reaps it, which some inits do only once a second. kill(2) counts
// zombies, so when it finds members /proc tells whether any is more.
func groupAlive(pgid int) bool {
	if syscall.Kill(-pgid, 0) == syscall.ESRCH {
		return false
	}
	d, err := os.Open("/proc")
	if err != nil {
		return true
	}
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil {
		return true
	}
	group := strconv.Itoa(pgid)
	for _, name := range names {
		if name[0] < '1' || name[0] > '9' {
			continue // not a process
		}
		if stat, err := os.ReadFile("/proc/" + name + "/stat"); err == nil && runningIn(stat, group) {
			return true
		}
	}
	return false
}

// runningIn reports whether a /proc/PID/stat line ("pid (comm) state ppid
// pgrp ...") describes a process of group pgid that is not a zombie.
func runningIn(stat []byte, pgid string) bool {
	f := statFields(stat)
	return len(f) >= 3 && string(f[0]) != "Z" && string(f[0]) != "X" && string(f[2]) == pgid
}

// statFields returns the fields of a /proc/PID/stat line from field 3 on:
// the command name (field 2) is in parentheses and may hold anything, so
// they follow its last ')'. f[0] is field 3.
func statFields(stat []byte) [][]byte {
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return nil
	}
	return bytes.Fields(stat[i+1:])
}
