package state

import (
	"bufio"
	"errors"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestLockEndsWithItsProcess kills the process that holds a job's lock
// while a child of it holds a copy of the lock's descriptor, as every
// child does between fork and exec (a kill -9 that lands while runner
// starts a step): the lock must end with its process all the same, and
// the job must then list as interrupted by its owner's death. A flock
// lasted until the child exec'd, so a resume started at once was
// refused.
func TestLockEndsWithItsProcess(t *testing.T) {
	s := Store{Dir: t.TempDir()}
	j, err := s.Create(Meta{ID: "j", Status: Running, Started: time.Now().Add(-time.Hour)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	j.Unlock()
	helper := exec.Command(os.Args[0], "-test.run=^TestLockHelper$")
	helper.Env = append(os.Environ(), "RUNNER_LOCK_HELPER="+j.Dir)
	out, err := helper.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := helper.Start(); err != nil {
		t.Fatal(err)
	}
	defer helper.Process.Kill()
	line, err := bufio.NewReader(out).ReadString('\n')
	child, _ := strconv.Atoi(strings.TrimSpace(line))
	if err != nil || child <= 0 {
		t.Fatalf("helper said %q, %v", line, err)
	}
	defer syscall.Kill(child, syscall.SIGKILL)

	if pid, err := j.Owner(); pid != helper.Process.Pid || err != nil {
		t.Errorf("Owner = %d, %v; want the helper, %d", pid, err, helper.Process.Pid)
	}
	if err := j.Lock(false); !errors.Is(err, ErrLocked) {
		t.Errorf("Lock while the helper holds it: %v, want ErrLocked", err)
	}
	if list, _ := s.List(); len(list) != 1 || list[0].Status != Running || list[0].OwnerDied {
		t.Errorf("List while the helper runs the job = %+v", list)
	}

	helper.Process.Signal(syscall.SIGKILL)
	helper.Wait()
	if err := syscall.Kill(child, 0); err != nil {
		t.Fatalf("the child is gone too early: %v", err)
	}
	if pid, err := j.Owner(); pid != 0 || err != nil {
		t.Errorf("Owner after the holder died = %d, %v; want 0 (the child holds its descriptor, not its lock)", pid, err)
	}
	list, _ := s.List()
	if len(list) != 1 || list[0].Status != Interrupted || !list[0].OwnerDied || !list[0].Finished.After(list[0].Started) {
		t.Errorf("List after the holder died = %+v; want interrupted, owner_died, finished", list)
	}
	if err := j.Lock(false); err != nil {
		t.Fatalf("Lock after the holder died: %v", err)
	}
	j.Unlock()
}

// TestLockHelper is TestLockEndsWithItsProcess's holder: it locks the job
// in RUNNER_LOCK_HELPER, starts a child that inherits the lock's
// descriptor, prints the child's pid and waits to be killed.
func TestLockHelper(t *testing.T) {
	dir := os.Getenv("RUNNER_LOCK_HELPER")
	if dir == "" {
		t.Skip("run by TestLockEndsWithItsProcess")
	}
	j := &Job{Dir: dir, Meta: Meta{ID: "j"}}
	if err := os.WriteFile(j.Layout().Events, []byte("{}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := j.Lock(false); err != nil {
		t.Fatal(err)
	}
	pid, err := syscall.ForkExec("/bin/sh", []string{"sh", "-c", "sleep 60"}, &syscall.ProcAttr{
		Files: []uintptr{0, 2, 2, j.lock.Fd()}, // not stdout: the test reads it to EOF
		Sys:   &syscall.SysProcAttr{Setpgid: true},
	})
	if err != nil {
		t.Fatal(err)
	}
	os.Stdout.WriteString(strconv.Itoa(pid) + "\n")
	time.Sleep(time.Minute)
}
