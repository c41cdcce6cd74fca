package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/runnerdev/runner/internal/eventlog"
	"github.com/runnerdev/runner/internal/natstest"
	"github.com/runnerdev/runner/internal/runnertest"
	"github.com/runnerdev/runner/internal/state"
	"github.com/runnerdev/runner/internal/testkit"
)

// fenceWorkflow's items each run for about 3 s, writing a tick every
// 100 ms: a run's last tick is as late as it ran.
const fenceWorkflow = `mode: mapreduce
map:
  input: seq 1 2
  max_parallel: 2
  agent_template:
    - shell: |
        for i in $(seq 30); do
          echo "${item} $RUNNER_WORKER $(date +%s%N)" >> runs.log
          sleep 0.1
        done
`

// TestNATSFencing stops a worker with SIGSTOP (its processes, not its
// items' children) for longer than ack_wait while it runs both items of a
// job, so that the server gives their tasks to another worker, then lets
// it go on (SIGCONT). The frozen worker's watchdog kills its items once
// their leases run out, before the server gives the tasks away, and the
// thawed worker sends no result: no item has two runs at once, and each
// item succeeded once, run by the second worker (§11.9.6).
func TestNATSFencing(t *testing.T) {
	skipNATSProcesses(t, "freezes a worker past ack_wait")
	t.Parallel()
	srv := natstest.Start(t)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "fence.yml"), []byte(fenceWorkflow), 0o600); err != nil {
		t.Fatal(err)
	}
	runsLog := filepath.Join(dir, "runs.log")
	frozen := startWorker(t, dir, srv.URL(), "fence", "frozen")
	run, out, exited := startRunner(t, dir, "run", "--nats", srv.URL(), "--queue", "fence", "--job-id", "j", "fence.yml")
	waitForLines(runsLog, 4, exited) // both items are running on it
	if err := frozen.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	startWorker(t, dir, srv.URL(), "fence", "other")
	// Thaw it only once the server, its ack_wait out, gave both
	// tasks to the other worker and their runs began.
	if !waitUntil(func() bool { return len(itemsRunBy(t, runsLog, "other")) == 2 }, exited) {
		t.Fatalf("the other worker ran items %v, want both\n%s", itemsRunBy(t, runsLog, "other"), out)
	}
	if err := frozen.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	waitExit(t, exited)
	if code := run.ProcessState.ExitCode(); code != 0 {
		t.Fatalf("run: exit %d\n%s", code, out)
	}

	type span struct {
		worker      string
		first, last int64
	}
	runs := map[string][]*span{} // by item, in order of start
	for _, line := range readLines(t, runsLog) {
		f := strings.Fields(line)
		at, _ := strconv.ParseInt(f[2], 10, 64)
		spans := runs[f[0]]
		if n := len(spans); n == 0 || spans[n-1].worker != f[1] {
			runs[f[0]] = append(spans, &span{worker: f[1], first: at, last: at})
			continue
		}
		spans[len(spans)-1].last = at
	}
	for item, spans := range runs {
		if len(spans) != 2 || spans[0].worker != "frozen" || spans[1].worker != "other" {
			var seen []string
			for _, s := range spans {
				seen = append(seen, s.worker+" "+time.Duration(s.last-s.first).String())
			}
			t.Errorf("item %s: %d runs (%s), want one on the frozen worker, then one on the other", item, len(spans), strings.Join(seen, ", "))
			continue
		}
		if gap := time.Duration(spans[1].first - spans[0].last); gap <= 0 {
			t.Errorf("item %s: the second run started %v before the frozen worker's run stopped", item, -gap)
		}
	}
	events, err := eventlog.Read(state.Store{Dir: filepath.Join(dir, ".runner")}.Layout("j").Events, eventlog.Query{Types: []eventlog.Type{eventlog.TypeItemSucceeded, eventlog.TypeItemFailed}})
	if err != nil {
		t.Fatal(err)
	}
	var ends []string
	for _, e := range events {
		ends = append(ends, string(e.Type)+" "+e.ItemID+" by "+e.Str("worker"))
	}
	slices.Sort(ends)
	if want := []string{"item_succeeded 1 by other", "item_succeeded 2 by other"}; !slices.Equal(ends, want) {
		t.Errorf("items ended %q, want %q", ends, want)
	}
}

// itemsRunBy returns the items of which worker wrote a line to runsLog.
func itemsRunBy(t *testing.T, runsLog, worker string) map[string]bool {
	t.Helper()
	items := map[string]bool{}
	for _, line := range readLines(t, runsLog) {
		if f := strings.Fields(line); len(f) == 3 && f[1] == worker {
			items[f[0]] = true
		}
	}
	return items
}

// skipNATSProcesses skips a test that runs runner, its workers and a NATS
// server as processes under -race (make nats runs them without it), and
// one that spends seconds waiting (slow says on what) under -short.
func skipNATSProcesses(t *testing.T, slow string) {
	t.Helper()
	if runnertest.Race {
		t.Skip("-race: process-level NATS tests run in make nats")
	}
	if slow != "" && testing.Short() {
		t.Skip("-short: it " + slow + "; make nats runs it")
	}
}

// startRunner starts runner with args in dir (it dies with the test) and
// returns it, its output and a channel closed once it has exited.
func startRunner(t *testing.T, dir string, args ...string) (*exec.Cmd, *strings.Builder, <-chan struct{}) {
	t.Helper()
	return startRunnerEnv(t, dir, nil, args...)
}

// startRunnerEnv is startRunner with more environment.
func startRunnerEnv(t *testing.T, dir string, env []string, args ...string) (*exec.Cmd, *strings.Builder, <-chan struct{}) {
	t.Helper()
	cmd := exec.Command("runner", args...)
	cmd.Dir, cmd.Env = dir, append(os.Environ(), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	out := &strings.Builder{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	return cmd, out, exited
}

// testWorker is a `runner worker` process of a test.
type testWorker struct {
	*exec.Cmd
	name   string
	log    string        // the file of its stdout and stderr
	exited chan struct{} // closed once it has exited
}

// natsAckWait is the test workers' ack_wait: 2 s, scaled (a loaded
// machine can leave heartbeats unanswered longer than 2 s, and every
// delivery cut off that way is one of the task's max_deliveries).
var natsAckWait = testkit.Scale(2 * time.Second)

// startWorker starts `runner worker` for queue in dir (ack_wait
// natsAckWait, two items at once) with the test's environment, killed
// when the test ends.
func startWorker(t *testing.T, dir, url, queue, name string) *testWorker {
	t.Helper()
	return startWorkerArgs(t, dir, url, queue, name, nil)
}

// startWorkerArgs is startWorker with env as the worker's environment
// (nil: the test's) and more flags, which override the defaults; without
// --nats when url is "".
func startWorkerArgs(t *testing.T, dir, url, queue, name string, env []string, flags ...string) *testWorker {
	t.Helper()
	return startWorkerBin(t, "runner", dir, url, queue, name, env, flags...)
}

// startWorkerBin is startWorkerArgs with the runner program bin.
func startWorkerBin(t *testing.T, bin, dir, url, queue, name string, env []string, flags ...string) *testWorker {
	t.Helper()
	args := []string{"worker", "--queue", queue, "--name", name, "--ack-wait", natsAckWait.String(), "--concurrency", "2"}
	if url != "" {
		args = append(args, "--nats", url)
	}
	args = append(args, flags...)
	w := &testWorker{
		Cmd:    exec.Command(bin, args...),
		name:   name,
		exited: make(chan struct{}),
	}
	// Its store in the test's directory, as a killed worker cannot remove
	// it; a TMPDIR in env (not the test's own) puts it elsewhere.
	tmp := "TMPDIR=" + t.TempDir()
	if env == nil {
		env = append(os.Environ(), tmp)
	} else {
		env = append([]string{tmp}, env...)
	}
	w.Dir, w.Env = dir, env
	w.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} // a test killed midway leaves no worker behind
	log, err := os.Create(filepath.Join(t.TempDir(), name+".log"))
	if err != nil {
		t.Fatal(err)
	}
	w.Stdout, w.Stderr, w.log = log, log, log.Name()
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = w.Wait(); close(w.exited) }()
	t.Cleanup(func() {
		_ = w.Process.Signal(syscall.SIGCONT)
		_ = w.Process.Kill()
		<-w.exited
		log.Close()
		if t.Failed() {
			data, _ := os.ReadFile(log.Name())
			t.Logf("worker %s:\n%s", name, data)
		}
	})
	return w
}
