package proc

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/runnerdev/runner/internal/testkit"
)

// orphanEnv makes the test binary a parent that runs `sleep 60` with
// DieWithParent, writes the sleep's pid to the file the variable names,
// and waits to be killed (see TestDieWithParent).
const orphanEnv = "PROC_TEST_ORPHAN_FILE"

// runOrphan is the test binary as orphanEnv makes it.
func runOrphan(file string) {
	hook := func(pgid int) func() {
		_ = os.WriteFile(file+".tmp", []byte(strconv.Itoa(pgid)), 0o600)
		_ = os.Rename(file+".tmp", file)
		return func() {}
	}
	Run(WithGroupHook(context.Background(), hook), Spec{Args: []string{"sleep", "60"}, Env: os.Environ(), DieWithParent: true})
	os.Exit(0)
}

// TestDieWithParent kills -9 a process while it runs a program with
// DieWithParent, and checks that the program dies with it.
func TestDieWithParent(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the parent-death signal is Linux's")
	}
	file := filepath.Join(t.TempDir(), "pid")
	parent := exec.Command(os.Args[0], "-test.run=^$")
	parent.Env = append(os.Environ(), orphanEnv+"="+file)
	if err := parent.Start(); err != nil {
		t.Fatal(err)
	}
	pid := 0
	if !testkit.Poll(func() bool {
		data, _ := os.ReadFile(file)
		pid, _ = strconv.Atoi(strings.TrimSpace(string(data)))
		return pid > 0
	}) {
		parent.Process.Kill()
		parent.Wait()
		t.Fatal("the parent did not start its child")
	}
	t.Cleanup(func() { syscall.Kill(pid, syscall.SIGKILL) })
	start, _ := StartTime(pid)
	parent.Process.Kill()
	parent.Wait()
	testkit.Eventually(t, func() bool { now, ok := StartTime(pid); return !ok || now != start || !running(pid) },
		fmt.Sprintf("the child %d ended after its parent was killed", pid))
}

// running reports whether pid runs and is not a zombie.
func running(pid int) bool {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	f := statFields(stat)
	return len(f) > 0 && string(f[0]) != "Z" && string(f[0]) != "X"
}

// TestEndGroup ends the members a killed leader left in its group, and
// leaves alone a group whose leader is not the one recorded.
func TestEndGroup(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("start times are read from /proc")
	}
	dir := t.TempDir()
	// leader starts a group whose two members write file once started.
	leader := func(file string) (*exec.Cmd, uint64) {
		cmd := exec.Command("sh", "-c", "sleep 60 & sleep 60 & : > "+file+"; wait")
		cmd.Dir = dir
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); cmd.Wait() })
		start, ok := StartTime(cmd.Process.Pid)
		if !ok {
			t.Fatal("no start time for the leader")
		}
		return cmd, start
	}

	other, start := leader("other")
	if err := EndGroup(other.Process.Pid, start+1, time.Second); err != nil {
		t.Fatal(err)
	}
	if !groupAlive(other.Process.Pid) {
		t.Error("EndGroup ended a group whose leader is another process than the one recorded")
	}

	left, start := leader("left")
	testkit.Eventually(t, func() bool { _, err := os.Stat(filepath.Join(dir, "left")); return err == nil }, "both sleeps started")
	left.Process.Kill()
	left.Wait()
	if !groupAlive(left.Process.Pid) {
		t.Fatal("the sleeps died with their leader")
	}
	if err := EndGroup(left.Process.Pid, start, testkit.Scale(5*time.Second)); err != nil {
		t.Fatal(err)
	}
	if groupAlive(left.Process.Pid) {
		t.Error("members of the group still run after EndGroup")
	}
}

// EndGroup signals no group that Run cannot have started: not with a pid
// kill(2) reads as "every process" or "this group", nor this group.
func TestEndGroupRefusesOtherGroups(t *testing.T) {
	for _, pgid := range []int{0, 1, syscall.Getpgrp()} {
		if err := EndGroup(pgid, 0, time.Second); err != nil {
			t.Errorf("EndGroup(%d): %v", pgid, err)
		}
	}
}

// Runs knows this process, not one with its pid and another start time,
// nor a process that has exited.
func TestRuns(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("start times are read from /proc")
	}
	start, _ := StartTime(os.Getpid())
	if !Runs(os.Getpid(), start) || Runs(os.Getpid(), start+1) {
		t.Errorf("Runs(self) = %v, with another start time %v", Runs(os.Getpid(), start), Runs(os.Getpid(), start+1))
	}
	done := exec.Command("true")
	if err := done.Run(); err != nil {
		t.Fatal(err)
	}
	if Runs(done.Process.Pid, 0) {
		t.Error("a process that exited runs")
	}
}

// StartedAt puts a process's start time on the wall clock: at most a
// second before it was started (the boot time's precision), never after.
func TestStartedAt(t *testing.T) {
	before := time.Now()
	cmd := exec.Command("sleep", "1")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	after := time.Now()
	ticks, ok := StartTime(cmd.Process.Pid)
	if !ok {
		t.Skip("start times are not known here")
	}
	at, ok := StartedAt(ticks)
	if !ok {
		t.Fatal("StartedAt: not known")
	}
	if at.Before(before.Add(-time.Second-10*time.Millisecond)) || at.After(after.Add(10*time.Millisecond)) {
		t.Errorf("StartedAt = %s; the process started between %s and %s", at, before, after)
	}
}
