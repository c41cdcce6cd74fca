package runnertest

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// memcap MIB COMMAND [ARGS...] runs COMMAND and kills its process group
// as soon as its resident memory passes MIB MiB, exiting 137 with a
// message; else it exits as COMMAND did. A script runs under it what
// could, were it to regress, take the machine's memory (a YAML alias
// bomb). It reads the resident set rather than limiting the address
// space (ulimit -v), which a binary built with -race cannot start under.
func memcap() {
	args := os.Args[1:]
	if len(args) < 2 {
		args = []string{"", ""}
	}
	limit, err := strconv.Atoi(args[0])
	if args[1] == "" || err != nil {
		fmt.Fprintln(os.Stderr, "usage: memcap MIB COMMAND [ARGS...]")
		os.Exit(2)
	}
	cmd := exec.Command(args[1], args[2:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "memcap:", err)
		os.Exit(2)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	for {
		select {
		case err := <-done:
			var exit *exec.ExitError
			if errors.As(err, &exit) {
				os.Exit(exit.ExitCode())
			}
			os.Exit(0)
		case <-time.After(5 * time.Millisecond):
		}
		if rss := residentMiB(cmd.Process.Pid); rss > limit {
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-done
			fmt.Fprintf(os.Stderr, "memcap: %s held %d MiB, more than %d MiB: killed\n", args[1], rss, limit)
			os.Exit(137)
		}
	}
}

// residentMiB is the resident memory of process pid (VmRSS), 0 when it
// cannot be read.
func residentMiB(pid int) int {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, _ := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")))
			return kb >> 10
		}
	}
	return 0
}
