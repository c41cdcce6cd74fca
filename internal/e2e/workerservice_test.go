package e2e

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/runnerdev/runner/internal/natstest"
	"github.com/runnerdev/runner/internal/testkit"
)

// serviceWorkflow's two items succeed.
const serviceWorkflow = `mode: mapreduce
map:
  input: seq 1 2
  agent_template:
    - shell: echo "${item}"
`

// waitForLog waits (10 s at most, and no longer than w runs) until w's
// log holds each of want, and fails the test with the log when it does
// not.
func waitForLog(t *testing.T, w *testWorker, want ...string) {
	t.Helper()
	for deadline := time.Now().Add(testkit.Scale(10 * time.Second)); time.Now().Before(deadline); {
		if data, _ := os.ReadFile(w.log); containsAll(string(data), want) {
			return
		}
		select {
		case <-w.exited:
			deadline = time.Time{} // one more look at its last words
		case <-time.After(20 * time.Millisecond):
		}
	}
	data, _ := os.ReadFile(w.log)
	if !containsAll(string(data), want) {
		t.Fatalf("worker %s's log lacks one of %q:\n%s", w.name, want, data)
	}
}

func containsAll(s string, parts []string) bool {
	for _, p := range parts {
		if !strings.Contains(s, p) {
			return false
		}
	}
	return true
}

// A worker started before its server says it waits, connects once the
// server is up and runs the tasks a job sends, a line for each, and then
// its summary (§11.8).
func TestWorkerWaitsForItsServer(t *testing.T) {
	skipNATSProcesses(t, "")
	t.Parallel()
	port := natstest.FreePort(t)
	url := "nats://127.0.0.1:" + strconv.Itoa(port)
	dir := natsJob(t, "svc.yml", serviceWorkflow)
	w := startWorkerArgs(t, dir, url, "svc", "early", nil, "--summary-every", "100ms")
	waitForLog(t, w, "runner worker early: NATS "+url+": nats: no servers available for connection; trying again (attempt 1,")
	natstest.StartOn(t, port)
	if code, out := runRunner(dir, nil, "run", "--nats", url, "--queue", "svc", "--job-id", "j", "svc.yml"); code != 0 {
		t.Fatalf("run: exit %d\n%s", code, out)
	}
	waitForLog(t, w,
		"runner worker early: connected to NATS "+url+" at attempt ",
		"runner worker early: pulling queue svc at NATS "+url+" (streams R1), 2 at once\n",
		"runner worker early: job j item 1: succeeded in ",
		"runner worker early: job j item 2: succeeded in ",
		"runner worker early: 2 tasks ended since the start (2 succeeded, 0 failed, 0 stopped); 0 of 2 slots busy\n")
}

// Without --nats, RUNNER_NATS, NATS_URL or NATS_CONTEXT, a worker reaches
// the server of the context the nats CLI selected (context.txt under
// XDG_CONFIG_HOME).
func TestWorkerUsesTheSelectedContext(t *testing.T) {
	skipNATSProcesses(t, "")
	t.Parallel()
	srv := natstest.Start(t)
	config := t.TempDir()
	contextFile := filepath.Join(config, "nats", "context", "svc.json")
	if err := os.MkdirAll(filepath.Dir(contextFile), 0o700); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(config, "nats", "context.txt"), []byte("svc\n"), 0o600)
	os.WriteFile(contextFile, []byte(`{"url": "`+srv.URL()+`"}`), 0o600)
	var env []string
	for _, kv := range os.Environ() {
		if name, _, _ := strings.Cut(kv, "="); !slices.Contains([]string{"RUNNER_NATS", "NATS_URL", "NATS_CONTEXT", "XDG_CONFIG_HOME"}, name) {
			env = append(env, kv)
		}
	}
	dir := natsJob(t, "svc.yml", serviceWorkflow)
	w := startWorkerArgs(t, dir, "", "ctx", "selected", append(env, "XDG_CONFIG_HOME="+config))
	waitForLog(t, w, "runner worker selected: pulling queue ctx at NATS context "+contextFile+" (streams R1), 2 at once\n")
	if code, out := runRunner(dir, nil, "run", "--nats", srv.URL(), "--queue", "ctx", "--job-id", "j", "svc.yml"); code != 0 {
		t.Fatalf("run: exit %d\n%s", code, out)
	}
	waitForLog(t, w,
		"runner worker selected: job j item 1: succeeded in ",
		"runner worker selected: job j item 2: succeeded in ")
}

// SIGTERM stops a worker waiting for its server at once, with the
// signal's exit code.
func TestWorkerStopsWhileWaiting(t *testing.T) {
	skipNATSProcesses(t, "")
	t.Parallel()
	url := "nats://127.0.0.1:" + strconv.Itoa(natstest.FreePort(t))
	w := startWorkerArgs(t, t.TempDir(), url, "svc", "waiting", nil)
	waitForLog(t, w, "trying again (attempt 1,")
	if err := w.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-w.exited:
	case <-time.After(testkit.Scale(5 * time.Second)):
		t.Fatal("the worker did not stop within 5 s of SIGTERM")
	}
	if code := w.ProcessState.ExitCode(); code != 128+int(syscall.SIGTERM) {
		t.Errorf("exit %d, want %d", code, 128+int(syscall.SIGTERM))
	}
}

// A worker whose server does not come up within --idle-exit exits 0, as
// after that long without a task.
func TestWorkerIdleExitWhileWaiting(t *testing.T) {
	skipNATSProcesses(t, "")
	t.Parallel()
	url := "nats://127.0.0.1:" + strconv.Itoa(natstest.FreePort(t))
	w := startWorkerArgs(t, t.TempDir(), url, "svc", "idle", nil, "--idle-exit", "500ms")
	waitForLog(t, w, "runner worker idle: no NATS server came up within --idle-exit 500ms: exiting\n")
	select {
	case <-w.exited:
	case <-time.After(testkit.Scale(5 * time.Second)):
		t.Fatal("the worker did not exit within 5 s of saying so")
	}
	if code := w.ProcessState.ExitCode(); code != 0 {
		t.Errorf("exit %d, want 0", code)
	}
}
