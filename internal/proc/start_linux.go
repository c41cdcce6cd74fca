package proc

import (
	"bytes"
	"os"
	"strconv"
	"syscall"
	"time"
)

// StartTime returns when process pid started, in clock ticks after boot
// (field 22 of /proc/PID/stat): with the pid it names one process, as a
// later process that reuses the pid starts later. ok is false when it
// cannot be read (no such process).
func StartTime(pid int) (ticks uint64, ok bool) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, false
	}
	fields := statFields(data)
	if len(fields) < 20 {
		return 0, false
	}
	ticks, err = strconv.ParseUint(string(fields[22-3]), 10, 64)
	return ticks, err == nil
}

// Runs reports whether process pid, which started at start (StartTime),
// still runs: it is there, is not a zombie, and is not a later process
// that took its pid.
func Runs(pid int, start uint64) bool {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	fields := statFields(data)
	if len(fields) < 20 || string(fields[0]) == "Z" || string(fields[0]) == "X" {
		return false
	}
	now, err := strconv.ParseUint(string(fields[22-3]), 10, 64)
	return err == nil && now == start
}

// dieWithParent has the child sent SIGTERM when the thread that forks it
// ends.
func dieWithParent(sys *syscall.SysProcAttr) { sys.Pdeathsig = syscall.SIGTERM }

// clockTicks is USER_HZ, the unit of the start times in /proc/PID/stat:
// 100 on every Linux the kernel exports to user space.
const clockTicks = 100

// StartedAt is the wall-clock time of a start time StartTime gave, to
// within a second earlier (the boot time in /proc/stat is in seconds).
func StartedAt(ticks uint64) (time.Time, bool) {
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		return time.Time{}, false
	}
	for line := range bytes.Lines(data) {
		if rest, ok := bytes.CutPrefix(line, []byte("btime ")); ok {
			boot, err := strconv.ParseInt(string(bytes.TrimSpace(rest)), 10, 64)
			if err != nil {
				return time.Time{}, false
			}
			return time.Unix(boot, 0).Add(time.Duration(ticks) * time.Second / clockTicks), true
		}
	}
	return time.Time{}, false
}
