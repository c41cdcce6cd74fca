package e2e

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/runnerdev/runner/internal/state"
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
reduce:
  - shell: test -s ${map.results_file}
`

// bigOutputWorkflow is issue 11's full-disk case: each result is a 20 kB
// line, so the write that meets the full disk tears one.
const bigOutputWorkflow = `name: big
mode: mapreduce
setup:
  - shell: seq 1 200 > items.txt
map:
  input: items.txt
  max_parallel: 4
  agent_template:
    - shell: printf '%020000d' 0
reduce:
  - shell: test -s ${map.results_file}
`

// A state dir that fills up fails the job with a clear error and loses
// nothing: once there is room again, resume finishes every item, and the
// results and the event log hold every record whole. Not with -short: it
// runs 500 items through a disk that fills up.
func TestFullDiskLosesNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: 500 items through a full disk")
	}
	for _, tc := range []struct {
		name, workflow, size string
		total, exit, failed  int
	}{
		{"short lines", fillWorkflow, "400k", 300, 3, 30},
		{"20 kB results", bigOutputWorkflow, "2m", 200, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			stateDir := filepath.Join(dir, "state")
			os.Mkdir(stateDir, 0o700)
			mount(t, "-t", "tmpfs", "-o", "size="+tc.size, "tmpfs", stateDir)
			unmountAtCleanup(t, stateDir)
			os.WriteFile(filepath.Join(dir, "fill.yml"), []byte(tc.workflow), 0o600)

			code, out := runnerIn(t, dir, "run", "--state-dir", stateDir, "--job-id", "f", "fill.yml")
			if code != 1 || !strings.Contains(out, "no space left on device") {
				t.Fatalf("full disk: exit %d, want 1 with the ENOSPC error:\n%s", code, out)
			}
			store := state.Store{Dir: stateDir}
			auditJob(t, store, "f", tc.total, false)

			mount(t, "-o", "remount,size=20m", stateDir)
			code, out = runnerIn(t, dir, "resume", "--state-dir", stateDir, "f")
			if code != tc.exit {
				t.Fatalf("resume with room: exit %d, want %d:\n%s", code, tc.exit, out)
			}
			counts := auditJob(t, store, "f", tc.total, true)
			if counts[state.ItemSucceeded] != tc.total-tc.failed || counts[state.ItemDLQ] != tc.failed {
				t.Errorf("end state %v, want %d succeeded and %d in the DLQ", counts, tc.total-tc.failed, tc.failed)
			}
			checkLogsWhole(t, dir, stateDir, "f", tc.total)
		})
	}
}

// checkLogsWhole checks that a job's results file (which its reduce
// reads, so the job wrote it) holds every item and that
// its event log reads: no record was lost to, or merged with, a line that a
// full disk tore.
func checkLogsWhole(t *testing.T, dir, stateDir, jobID string, total int) {
	t.Helper()
	job, err := state.Store{Dir: stateDir}.Open(jobID)
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(job.Layout().ResultsJSON)
	if err != nil {
		t.Fatal(err)
	}
	var results []json.RawMessage
	if err := json.Unmarshal(data, &results); err != nil || len(results) != total {
		t.Errorf("results file has %d results (%v), want %d", len(results), err, total)
	}
	for _, args := range [][]string{{"events", jobID}, {"report", jobID}} {
		if code, out := runnerIn(t, dir, append([]string{"--state-dir", stateDir}, args...)...); code != 0 {
			t.Errorf("runner %v: exit %d\n%.500s", args, code, out)
		}
	}
}

// dlqWorkflow puts item 10 of its 12 in the DLQ.
const dlqWorkflow = `name: fill
mode: mapreduce
map:
  input: seq 1 12
  max_parallel: 4
  agent_template:
    - shell: '[ ${item} -ne 10 ]'
`

// A read-only state dir: commands that only read work; those that write
// say why they cannot.
func TestReadOnlyStateDir(t *testing.T) {
	dir := t.TempDir()
	stateDir := filepath.Join(dir, "state")
	os.WriteFile(filepath.Join(dir, "fill.yml"), []byte(dlqWorkflow), 0o600)
	if code, out := runnerIn(t, dir, "run", "-q", "--state-dir", stateDir, "--job-id", "f", "fill.yml"); code != 3 {
		t.Fatalf("run: exit %d\n%s", code, out)
	}
	mount(t, "--bind", stateDir, stateDir)
	unmountAtCleanup(t, stateDir)
	mount(t, "-o", "remount,bind,ro", stateDir)

	for _, args := range [][]string{{"jobs"}, {"events", "f"}, {"dlq", "list", "f"}, {"dlq", "show", "f", "10"}, {"dlq", "stats", "f"}, {"report", "f"}} {
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
