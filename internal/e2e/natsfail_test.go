package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/runnerdev/runner/dlq"
	"github.com/runnerdev/runner/internal/eventlog"
	"github.com/runnerdev/runner/internal/natsconn"
	"github.com/runnerdev/runner/internal/natstest"
	"github.com/runnerdev/runner/internal/state"
	"github.com/runnerdev/runner/internal/testkit"
)

// natsJob writes file in a new directory and returns the directory.
func natsJob(t *testing.T, name, workflow string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, name), []byte(workflow), 0o600); err != nil {
		t.Fatal(err)
	}
	return dir
}

// runRunner runs the runner binary in dir with extra environment and
// returns its exit code and output; one that has not exited within 2
// minutes is killed (exit -1). It may be called from any goroutine.
func runRunner(dir string, env []string, args ...string) (int, string) {
	ctx, cancel := context.WithTimeout(context.Background(), testkit.Scale(2*time.Minute))
	defer cancel()
	cmd := exec.CommandContext(ctx, "runner", args...)
	cmd.Dir, cmd.Env = dir, append(os.Environ(), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	out := &strings.Builder{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Run(); ctx.Err() != nil {
		return -1, out.String() + "\n(killed: no exit within 2 minutes)"
	} else if cmd.ProcessState == nil {
		return -1, err.Error()
	}
	return cmd.ProcessState.ExitCode(), out.String()
}

// dlqFailures reads a job's DLQ: each item's failures.
func dlqFailures(t *testing.T, dir, jobID string) map[string][]dlq.Failure {
	t.Helper()
	job, err := state.Store{Dir: filepath.Join(dir, ".runner")}.Open(jobID)
	if err != nil {
		t.Fatal(err)
	}
	return dlqItems(t, job)
}

// poisonWorkflow's item 3 kills the worker that runs it (its shell's
// parent), every time.
const poisonWorkflow = `mode: mapreduce
map:
  input: seq 1 6
  max_parallel: 2
  agent_template:
    - shell: |
        echo "${item} $RUNNER_WORKER" >> runs.log
        if [ ${item} = 3 ]; then kill -9 $PPID; sleep 5; fi
distributed:
  max_deliveries: 3
`

// TestNATSPoisonItem runs an item that kills its worker every time: once
// its task has been delivered max_deliveries times, the worker it comes
// to next fails it as kind lost without running it, the error policy
// puts it in the DLQ, and the other items succeed (§11.9.7). Dead workers
// are replaced, a bounded number of times.
func TestNATSPoisonItem(t *testing.T) {
	skipNATSProcesses(t, "waits out ack_wait after each of its worker kills")
	t.Parallel()
	srv := natstest.Start(t)
	dir := natsJob(t, "poison.yml", poisonWorkflow)
	workers := []*testWorker{startWorker(t, dir, srv.URL(), "poison", "w1"), startWorker(t, dir, srv.URL(), "poison", "w2")}
	stop := make(chan struct{})
	replaced := make(chan int)
	go func() { // replaces dead workers, at most 8 times
		n := 0
		defer func() { replaced <- n }()
		for n < 8 {
			select {
			case <-stop:
				return
			case <-time.After(50 * time.Millisecond):
			}
			for i, w := range workers {
				select {
				case <-w.exited:
					n++
					workers[i] = startWorker(t, dir, srv.URL(), "poison", "r"+strconv.Itoa(n))
				default:
				}
			}
		}
	}()
	code, out := runRunner(dir, nil, "run", "--nats", srv.URL(), "--queue", "poison", "--job-id", "j", "poison.yml")
	close(stop)
	t.Logf("%d workers replaced", <-replaced)
	if code != 3 {
		t.Fatalf("run: exit %d, want 3 (the poison item in the DLQ)\n%s", code, out)
	}
	counts := auditJob(t, state.Store{Dir: filepath.Join(dir, ".runner")}, "j", 6, true)
	if counts[state.ItemSucceeded] != 5 || counts[state.ItemDLQ] != 1 {
		t.Errorf("end state %v, want 5 succeeded and item 3 in the DLQ", counts)
	}
	failures := dlqFailures(t, dir, "j")["3"]
	if len(failures) != 1 || failures[0].Kind != "lost" {
		t.Errorf("item 3's DLQ failures %+v, want one of kind lost", failures)
	}
	runs := 0
	for _, line := range readLines(t, filepath.Join(dir, "runs.log")) {
		if strings.HasPrefix(line, "3 ") {
			runs++
		}
	}
	if runs != 3 {
		t.Errorf("item 3 ran %d times, want max_deliveries (3)", runs)
	}
}

// secretsWorkflow's items print TOKEN on both outputs, in a first step
// (whose checkpoint goes to the coordinator before the second starts) and
// a second; item 4 fails with it in its message.
const secretsWorkflow = `mode: mapreduce
secrets: [TOKEN]
map:
  input: seq 1 4
  max_parallel: 2
  agent_template:
    - shell: echo "first step of ${item} $TOKEN"
    - shell: |
        echo "item ${item} token $TOKEN"
        echo "stderr of ${item}: $TOKEN" >&2
        [ ${item} -ne 4 ] || { echo "failing with $TOKEN" >&2; exit 1; }
`

// TestNATSSecrets runs a job whose workers print a secret they take from
// their own environment: nothing of it reaches the server's store (the
// spec carries no value; the workers mask results, tails and events),
// while the masked failure still reaches the DLQ. A worker without the
// variable fails items as spawn naming it (§11.9.8).
func TestNATSSecrets(t *testing.T) {
	skipNATSProcesses(t, "")
	t.Parallel()
	const value = "s3cr3tvalue"
	storeDir := t.TempDir()
	srv, err := natstest.StartIn(storeDir)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown()
	// Everything published on the server, as a client subscribed to all
	// subjects sees it: tasks, results, the spec, heartbeats, acks.
	var (
		mu   sync.Mutex
		seen bytes.Buffer
	)
	nc := srv.Connect(t)
	if _, err := nc.Subscribe(">", func(m *nats.Msg) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(&seen, "%s %v %s\n", m.Subject, m.Header, m.Data)
	}); err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	dir := natsJob(t, "secrets.yml", secretsWorkflow)
	env := []string{"TOKEN=" + value}
	startWorkerArgs(t, dir, srv.URL(), "secrets", "has", append(os.Environ(), env...))
	code, out := runRunner(dir, env, "run", "--nats", srv.URL(), "--queue", "secrets", "--job-id", "j", "secrets.yml")
	if code != 3 {
		t.Fatalf("run: exit %d, want 3 (item 4 in the DLQ)\n%s", code, out)
	}
	failures := dlqFailures(t, dir, "j")["4"]
	if len(failures) != 1 || !strings.Contains(failures[0].StderrTail, "failing with ***") {
		t.Errorf("item 4's DLQ failures %+v, want one whose stderr tail says \"failing with ***\"", failures)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	if !strings.Contains(seen.String(), "item 1 token ***") || !strings.Contains(seen.String(), "first step of 1 ***") {
		t.Errorf("no result with item 1's masked output, or checkpoint of its first step, went over NATS: the test saw nothing")
	}
	if strings.Contains(seen.String(), value) {
		t.Errorf("the secret went over NATS:\n%s", seen.String())
	}
	mu.Unlock()
	storeHolds(t, storeDir, value)

	bare := slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "TOKEN=") })
	startWorkerArgs(t, dir, srv.URL(), "bare", "lacks", bare)
	code, out = runRunner(dir, env, "run", "--nats", srv.URL(), "--queue", "bare", "--job-id", "k", "secrets.yml")
	if code != 3 {
		t.Fatalf("run on a worker without TOKEN: exit %d, want 3\n%s", code, out)
	}
	for item, fs := range dlqFailures(t, dir, "k") {
		if len(fs) != 1 || fs[0].Kind != "spawn" || !strings.Contains(fs[0].Message, "secret TOKEN is not set on worker lacks") {
			t.Errorf("item %s's DLQ failures %+v, want one of kind spawn naming TOKEN and the worker", item, fs)
		}
	}
}

// interruptWorkflow's items run until they are stopped, each recording
// its process group (its shell's pid) first; item 2 ignores SIGTERM. Once
// the file resumed exists, they succeed at once.
const interruptWorkflow = `mode: mapreduce
map:
  input: seq 1 4
  max_parallel: 4
  agent_template:
    - shell: |
        if [ -e resumed ]; then echo ${item} >> done.log; exit 0; fi
        [ ${item} -ne 2 ] || trap '' TERM
        echo $$ ${item} >> pgids
        sleep 60
`

// TestNATSInterrupt sends SIGINT to a coordinator whose items run on two
// workers: it exits 130, the workers kill the job's process groups (the
// one that ignores SIGTERM gets SIGKILL after their grace), and a resume
// runs every item to its end (§11.9.9).
func TestNATSInterrupt(t *testing.T) {
	skipNATSProcesses(t, "waits out the 2 s kill grace of its items")
	t.Parallel()
	srv := natstest.Start(t)
	dir := natsJob(t, "interrupt.yml", interruptWorkflow)
	// Their leases (ack_wait less two heartbeats) outlast the test's wait
	// for the groups to go: only the interrupt can stop the items.
	for _, name := range []string{"w1", "w2"} {
		startWorkerArgs(t, dir, srv.URL(), "int", name, nil, "--ack-wait", "10m")
	}
	run, out, exited := startRunner(t, dir, "run", "--nats", srv.URL(), "--queue", "int", "--job-id", "j", "interrupt.yml")
	pgidsFile := filepath.Join(dir, "pgids")
	waitForLines(pgidsFile, 4, exited)
	var pgids []int
	for _, line := range readLines(t, pgidsFile) {
		pgid, _ := strconv.Atoi(strings.Fields(line)[0])
		pgids = append(pgids, pgid)
	}
	if len(pgids) != 4 {
		t.Fatalf("%d items started, want 4\n%s", len(pgids), out)
	}
	sent := time.Now()
	if err := run.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	waitExit(t, exited)
	if code := run.ProcessState.ExitCode(); code != 130 {
		t.Fatalf("run after SIGINT: exit %d, want 130\n%s", code, out)
	}
	for _, pgid := range pgids {
		if !waitUntil(func() bool { return !groupAlive(pgid) }, nil) {
			t.Errorf("process group %d still ran %v after SIGINT", pgid, time.Since(sent).Round(time.Millisecond))
		}
	}
	t.Logf("items stopped %v after SIGINT", time.Since(sent).Round(time.Millisecond))

	if err := os.WriteFile(filepath.Join(dir, "resumed"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if code, out := runRunner(dir, nil, "resume", "j"); code != 0 {
		t.Fatalf("resume: exit %d, want 0\n%s", code, out)
	}
	counts := auditJob(t, state.Store{Dir: filepath.Join(dir, ".runner")}, "j", 4, true)
	if counts[state.ItemSucceeded] != 4 {
		t.Errorf("end state %v, want 4 succeeded", counts)
	}
	done := readLines(t, filepath.Join(dir, "done.log"))
	slices.Sort(done)
	if want := []string{"1", "2", "3", "4"}; !slices.Equal(done, want) {
		t.Errorf("items that ran to their end after the resume: %q, want each once: %q", done, want)
	}
}

// groupAlive reports whether a process of group pgid is alive (a zombie
// is not).
func groupAlive(pgid int) bool {
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if stat := procStat(pid); len(stat) > 2 && stat[0] != "Z" && stat[2] == strconv.Itoa(pgid) {
			return true
		}
	}
	return false
}

// creditWorkflow's items 5 to 9 fail, which opens the workflow breaker
// for a second; six worker slots could take more than max_parallel.
const creditWorkflow = `mode: mapreduce
map:
  input: seq 1 30
  max_parallel: 3
  agent_template:
    - shell: sleep 0.1; [ ${item} -lt 5 ] || [ ${item} -gt 9 ]
error_policy:
  circuit_breaker:
    failure_threshold: 3
    success_threshold: 1
    timeout: 1s
    half_open_requests: 1
`

// creditSample is the job's tasks as the server saw them at one moment.
type creditSample struct {
	at      time.Time      // when the server's answer had come
	tasks   map[string]int // item id → its tasks in RUNNER_TASKS (queued, running or finished and their message not yet acked)
	lastSeq uint64         // the stream's last publish
}

// TestNATSCreditWindow samples the tasks stream every 5 ms while a job
// runs on workers with more slots than its max_parallel: the job's tasks
// queued and running never exceed max_parallel, and nothing is published
// while its breaker is open (between circuit_opened and circuit_half_open)
// (§11.9.2). A task whose result the coordinator has recorded is neither:
// it stays in the stream until its worker's ack (sent once the result is
// stored, §11.4) reaches the server, which can be after the coordinator
// has published the task taking its slot.
func TestNATSCreditWindow(t *testing.T) {
	skipNATSProcesses(t, "samples the server's state while a 30-item job runs")
	t.Parallel()
	srv := natstest.Start(t)
	dir := natsJob(t, "credit.yml", creditWorkflow)
	for _, name := range []string{"w1", "w2", "w3"} {
		startWorker(t, dir, srv.URL(), "credit", name)
	}
	js, err := jetstream.New(srv.Connect(t))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	samples := make(chan []creditSample)
	go func() {
		var got []creditSample
		defer func() { samples <- got }()
		for ctx.Err() == nil && len(got) < 100_000 {
			time.Sleep(5 * time.Millisecond)
			s, err := js.Stream(ctx, "RUNNER_TASKS")
			if err != nil {
				continue // not made yet
			}
			si, err := s.Info(ctx, jetstream.WithSubjectFilter("runner.task.credit.>"))
			if err != nil {
				continue
			}
			sample := creditSample{at: time.Now(), tasks: map[string]int{}, lastSeq: si.State.LastSeq}
			for subject := range si.State.Subjects {
				// runner.task.<queue>.<job key>.<batch>: one message, whose
				// tasks name their items.
				raw, err := s.GetLastMsgForSubject(ctx, subject)
				if err != nil {
					continue // taken meanwhile
				}
				var b natsconn.Batch
				if err := json.Unmarshal(raw.Data, &b); err != nil {
					t.Errorf("task message %s: %v", subject, err)
				}
				for _, task := range b.Tasks {
					sample.tasks[task.ItemID]++
				}
			}
			got = append(got, sample)
		}
	}()
	code, out := runRunner(dir, nil, "run", "--nats", srv.URL(), "--queue", "credit", "--job-id", "j", "credit.yml")
	cancel()
	got := <-samples
	if code != 3 {
		t.Fatalf("run: exit %d, want 3 (items 5-9 in the DLQ)\n%s", code, out)
	}
	if len(got) < 20 {
		t.Fatalf("only %d samples of the server's state", len(got))
	}
	ended := map[string]time.Time{} // item → when the coordinator recorded its result
	finished, err := eventlog.Read(state.Store{Dir: filepath.Join(dir, ".runner")}.Layout("j").Events, eventlog.Query{Types: []eventlog.Type{eventlog.TypeItemSucceeded, eventlog.TypeItemFailed}})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range finished {
		ended[e.ItemID] = e.Time
	}
	if len(ended) != 30 {
		t.Fatalf("%d items have a result event, want 30", len(ended))
	}
	acking := 0 // samples holding a finished item's task
	for _, s := range got {
		out, items := 0, []string{} // tasks queued or running
		for item, n := range s.tasks {
			if end, ok := ended[item]; !ok || end.After(s.at) {
				out += n
				items = append(items, item)
			}
		}
		if out < len(s.tasks) {
			acking++
		}
		if out > 3 {
			t.Fatalf("at %s: %d tasks of unfinished items (%v) in the stream, over max_parallel 3", s.at.Format(time.StampMilli), out, items)
		}
	}
	events, err := eventlog.Read(state.Store{Dir: filepath.Join(dir, ".runner")}.Layout("j").Events, eventlog.Query{Types: []eventlog.Type{eventlog.TypeCircuitOpened, eventlog.TypeCircuitHalfOpen}})
	if err != nil {
		t.Fatal(err)
	}
	var opened time.Time
	openings := 0
	for _, e := range events {
		if e.Type == eventlog.TypeCircuitOpened {
			opened = e.Time
			openings++
			continue
		}
		if opened.IsZero() {
			continue
		}
		// A sample pair within the open time whose last publish moved.
		for i := 1; i < len(got); i++ {
			if got[i-1].at.After(opened) && got[i].at.Before(e.Time) && got[i].lastSeq != got[i-1].lastSeq {
				t.Errorf("a task was published between %s and %s, while the breaker was open (%s to %s)",
					got[i-1].at.Format(time.StampMilli), got[i].at.Format(time.StampMilli), opened.Format(time.StampMilli), e.Time.Format(time.StampMilli))
			}
		}
		opened = time.Time{}
	}
	if openings == 0 {
		t.Fatal("the breaker never opened: the test tells nothing")
	}
	t.Logf("%d samples (%d with a finished item's task not yet acked), breaker opened %d times", len(got), acking, openings)
}

// sameIDWorkflow's items record which directory's job ran them.
const sameIDWorkflow = `mode: mapreduce
map:
  input: seq 1 6
  max_parallel: 3
  agent_template:
    - shell: echo ${item} >> "${dir}/runs.log"
`

// TestNATSSameJobID runs two jobs of one id from two state directories
// on one server, at once and then again: each runs its own items once,
// as their subjects and message ids differ (a job key drawn per job).
func TestNATSSameJobID(t *testing.T) {
	skipNATSProcesses(t, "runs four jobs")
	t.Parallel()
	srv := natstest.Start(t)
	startWorker(t, t.TempDir(), srv.URL(), "same", "w1")
	dirs := []string{natsJob(t, "same.yml", sameIDWorkflow), natsJob(t, "same.yml", sameIDWorkflow)}
	for round := range 2 {
		codes := make(chan string, len(dirs))
		for _, dir := range dirs {
			go func() {
				store := filepath.Join(dir, ".runner"+strconv.Itoa(round))
				code, out := runRunner(dir, nil, "run", "--state-dir", store, "--set", "dir="+dir, "--nats", srv.URL(), "--queue", "same", "--job-id", "j", "same.yml")
				codes <- fmt.Sprintf("exit %d\n%s", code, out)
			}()
		}
		for range dirs {
			if got := <-codes; !strings.HasPrefix(got, "exit 0\n") {
				t.Fatalf("round %d: run: %s", round, got)
			}
		}
	}
	for _, dir := range dirs {
		runs := readLines(t, filepath.Join(dir, "runs.log"))
		slices.Sort(runs)
		if want := []string{"1", "1", "2", "2", "3", "3", "4", "4", "5", "5", "6", "6"}; !slices.Equal(runs, want) {
			t.Errorf("%s: items run %q, want each once per round: %q", dir, runs, want)
		}
	}
}

// A worker killed with -9 leaves its store (its jobs' copies, its items'
// logs) behind; the next worker to start on the machine removes it.
func TestNATSKilledWorkersStoreIsRemoved(t *testing.T) {
	skipNATSProcesses(t, "")
	t.Parallel()
	srv := natstest.Start(t)
	dir, tmp := t.TempDir(), t.TempDir()
	env := append(os.Environ(), "TMPDIR="+tmp)
	// storesBut waits until the one store in tmp is not old and is made
	// (its lock file is there).
	storesBut := func(old string) string {
		t.Helper()
		var got []string
		for deadline := time.Now().Add(testkit.Scale(10 * time.Second)); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			if got, _ = filepath.Glob(filepath.Join(tmp, "runner-worker-*", "worker.lock")); len(got) == 1 && filepath.Dir(got[0]) != old {
				return filepath.Dir(got[0])
			}
		}
		t.Fatalf("stores %v, want one, not %q", got, old)
		return ""
	}
	w1 := startWorkerArgs(t, dir, srv.URL(), "store", "w1", env)
	first := storesBut("")
	_ = w1.Process.Kill()
	<-w1.exited
	if _, err := os.Stat(first); err != nil {
		t.Fatalf("the killed worker's store: %v", err)
	}
	startWorkerArgs(t, dir, srv.URL(), "store", "w2", env)
	storesBut(first)
}
