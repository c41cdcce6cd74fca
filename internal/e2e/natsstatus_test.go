package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/runnerdev/runner/internal/natstest"
	"github.com/runnerdev/runner/internal/testkit"
)

// strandedWorkflow's items wait, once started, until the file released
// exists; run again after that, they end at once.
const strandedWorkflow = `mode: mapreduce
map:
  input: seq 1 2
  max_parallel: 2
  agent_template:
    - shell: 'test -f released || { touch started.${item}; sleep 30; }'
`

// TestNATSStatusShowsLostWorker kills -9 the worker running both items of
// a job. Before: the status line shows its two busy slots (not "no
// worker pulling", as if no worker served the queue). After: the two
// tasks are shown waiting for redelivery, naming the lost worker and the
// queue's ack_wait, instead of running; once the server delivers them to
// the other worker, each redelivery is a line of the run and an event
// naming both workers.
func TestNATSStatusShowsLostWorker(t *testing.T) {
	skipNATSProcesses(t, "waits out ack_wait after a worker kill")
	t.Parallel()
	srv := natstest.Start(t)
	dir := natsJob(t, "w.yml", strandedWorkflow)
	ackWait := testkit.Scale(3 * time.Second)
	w1 := startWorkerArgs(t, dir, srv.URL(), "default", "w1", nil, "--ack-wait", ackWait.String())

	outPath := filepath.Join(t.TempDir(), "run.out")
	out, err := os.Create(outPath)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	run := exec.Command("runner", "run", "--nats", srv.URL(), "--job-id", "j", "--progress", "never", "w.yml")
	run.Dir, run.Env = dir, append(os.Environ(), "RUNNER_PROGRESS_INTERVAL=100ms")
	run.Stdout, run.Stderr = out, out
	run.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := run.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = run.Wait(); close(exited) }()
	defer func() { _ = run.Process.Kill(); <-exited }()
	output := func() string { data, _ := os.ReadFile(outPath); return string(data) }
	within := func(what string, cond func() bool) {
		t.Helper()
		for deadline := time.Now().Add(testkit.Scale(20 * time.Second)); !cond(); time.Sleep(50 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%s: not within 20 s\n%s", what, output())
			}
		}
	}
	exists := func(name string) bool { _, err := os.Stat(filepath.Join(dir, name)); return err == nil }

	within("both items started on w1", func() bool { return exists("started.1") && exists("started.2") })
	within("w1's slots shown busy", func() bool { return strings.Contains(output(), "queue default: 2 slots busy, no free slot") })
	if err := w1.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "released"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	startWorkerArgs(t, dir, srv.URL(), "default", "w2", nil, "--ack-wait", ackWait.String())
	within("the job ended", func() bool {
		select {
		case <-exited:
			return true
		default:
			return false
		}
	})
	text := output()
	if code := run.ProcessState.ExitCode(); code != 0 {
		t.Fatalf("run: exit %d, want 0\n%s", code, text)
	}
	if !strings.Contains(text, "0 running · 2 waiting for redelivery (worker w1 lost, ack_wait "+ackWait.String()+")") {
		t.Errorf("no progress line shows the two tasks waiting for redelivery from lost worker w1:\n%s", text)
	}
	if n := strings.Count(text, "task delivered again, to worker w2 (delivery 2); worker w1 had it"); n != 2 {
		t.Errorf("the run printed %d lines of a redelivery, want 2 (one per item):\n%s", n, text)
	}
	code, events := runRunner(dir, nil, "events", "--type", "task_redelivered", "j")
	if code != 0 || strings.Count(events, "task delivered again, to worker w2 (delivery 2); worker w1 had it") != 2 {
		t.Errorf("runner events --type task_redelivered: exit %d, want two redeliveries from w1 to w2:\n%s", code, events)
	}
}
