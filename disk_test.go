package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/runnerdev/runner/workflow/state"
)

// mount runs mount(8) with args, skipping the test where this machine does
// not allow it (the tests need root: as root, file modes do not stop writes).
func mount(t *testing.T, args ...string) {
	t.Helper()
	if out, err := exec.Command("mount", args...).CombinedOutput(); err != nil {
		t.Skipf("cannot mount here (needs root and CAP_SYS_ADMIN): %v: %s", err, out)
	}
}

func unmountAtCleanup(t *testing.T, dir string) {
	t.Cleanup(func() { exec.Command("umount", dir).Run() })
}

// runnerIn runs the runner binary in dir and returns its exit code and output.
func runnerIn(t *testing.T, dir string, args ...string) (int, string) {
	t.Helper()
	c := exec.Command("runner", args...)
	c.Dir = dir
	out, err := c.CombinedOutput()
	if err != nil {
		if exit, ok := err.(*exec.ExitError); ok {
			return exit.ExitCode(), string(out)
		}
		t.Fatal(err)
	}
	return 0, string(out)
}

const fillWorkflow = `name: fill
mode: mapreduce
setup:
  - shell: seq 1 300 > items.txt
map:
  input: items.txt
  max_parallel: 4
  agent_template:
    - shell: printf '%0500d\n' 0; [ $(( ${item} % 10 )) -ne 0 ]
`

// A state dir that fills up fails the job with a clear error and loses
// nothing: once there is room again, resume finishes every item.
func TestFullDiskLosesNothing(t *testing.T) {
	dir := t.TempDir()
	stateDir := filepath.Join(dir, "state")
	os.Mkdir(stateDir, 0o700)
	mount(t, "-t", "tmpfs", "-o", "size=400k", "tmpfs", stateDir)
	unmountAtCleanup(t, stateDir)
	os.WriteFile(filepath.Join(dir, "fill.yml"), []byte(fillWorkflow), 0o600)

	code, out := runnerIn(t, dir, "run", "--state-dir", stateDir, "--job-id", "f", "fill.yml")
	if code != 1 || !strings.Contains(out, "no space left on device") {
		t.Fatalf("full disk: exit %d, want 1 with the ENOSPC error:\n%s", code, out)
	}
	store := state.Store{Dir: stateDir}
	auditJob(t, store, "f", 300, false)

	mount(t, "-o", "remount,size=20m", stateDir)
	code, out = runnerIn(t, dir, "resume", "--state-dir", stateDir, "f")
	if code != 3 {
		t.Fatalf("resume with room: exit %d, want 3:\n%s", code, out)
	}
	counts := auditJob(t, store, "f", 300, true)
	if counts[state.ItemSucceeded] != 270 || counts[state.ItemDLQ] != 30 {
		t.Errorf("end state %v, want 270 succeeded and 30 in the DLQ", counts)
	}
}

// A read-only state dir: commands that only read work; those that write
// say why they cannot.
func TestReadOnlyStateDir(t *testing.T) {
	dir := t.TempDir()
	stateDir := filepath.Join(dir, "state")
	os.WriteFile(filepath.Join(dir, "fill.yml"), []byte(fillWorkflow), 0o600)
	if code, out := runnerIn(t, dir, "run", "-q", "--state-dir", stateDir, "--job-id", "f", "fill.yml"); code != 3 {
		t.Fatalf("run: exit %d\n%s", code, out)
	}
	mount(t, "--bind", stateDir, stateDir)
	unmountAtCleanup(t, stateDir)
	mount(t, "-o", "remount,bind,ro", stateDir)

	for _, args := range [][]string{{"jobs"}, {"events", "f"}, {"dlq", "list", "f"}, {"dlq", "show", "f", "item_9"}, {"dlq", "stats", "f"}, {"report", "f"}} {
		if code, out := runnerIn(t, dir, append([]string{"--state-dir", stateDir}, args...)...); code != 0 {
			t.Errorf("runner %v on a read-only state dir: exit %d\n%s", args, code, out)
		}
	}
	for _, args := range [][]string{{"run", "fill.yml"}, {"dlq", "retry", "f"}, {"dlq", "purge", "--yes", "f"}} {
		code, out := runnerIn(t, dir, append([]string{"--state-dir", stateDir}, args...)...)
		if code == 0 || !strings.Contains(out, "read-only file system") || strings.Contains(out, "panic") {
			t.Errorf("runner %v on a read-only state dir: exit %d, want a clear read-only error:\n%s", args, code, out)
		}
	}
}
