package e2e

import (
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/runnerdev/runner/internal/natstest"
	"github.com/runnerdev/runner/internal/state"
)

// natsChaosWorkflow's items log their start and end with the worker and
// the time, and run 0.2 to 0.6 s (most past a heartbeat: the
// server answers some of a killed run's heartbeats); every seventh fails
// (to the DLQ). (sh may be dash: no $RANDOM.)
const natsChaosWorkflow = `mode: mapreduce
map:
  input: seq 1 24
  max_parallel: 4
  agent_template:
    - shell: |
        echo "start ${item} $RUNNER_WORKER $(date +%s%N)" >> runs.log
        sleep 0.$((${item} % 5 + 2))
        echo "end ${item} $RUNNER_WORKER $(date +%s%N)" >> runs.log
        [ $((${item} % 7)) -ne 0 ]
`

const (
	natsChaosItems   = 24
	natsChaosFailing = 3 // 7, 14, 21
	natsChaosSlots   = 2 // --concurrency of each worker
	natsChaosWindow  = 4 // max_parallel
)

// natsRun is one item run as runs.log tells it.
type natsRun struct {
	item, worker string
	start, end   time.Time // end is zero for a run that was killed
}

// natsRuns reads runs.log: the runs of each item in order.
func natsRuns(t *testing.T, path string) map[string][]*natsRun {
	t.Helper()
	runs := map[string][]*natsRun{}
	for _, line := range readLines(t, path) {
		f := strings.Fields(line)
		if len(f) != 4 {
			continue // a line torn by a kill
		}
		ns, _ := strconv.ParseInt(f[3], 10, 64)
		at := time.Unix(0, ns)
		switch f[0] {
		case "start":
			runs[f[1]] = append(runs[f[1]], &natsRun{item: f[1], worker: f[2], start: at})
		case "end":
			for _, r := range runs[f[1]] {
				if r.worker == f[2] && r.end.IsZero() {
					r.end = at
				}
			}
		}
	}
	return runs
}

// natsCoordinator starts `runner run` (or `runner resume` once the job
// exists) of chaos.yml on url, its tasks in batches of up to 2
// (--nats-batch), and returns it with a channel closed when it exits.
func natsCoordinator(t *testing.T, dir, url string) (*exec.Cmd, <-chan struct{}) {
	t.Helper()
	args := []string{"resume", "--nats-batch", "2", "j"}
	if _, err := os.Stat(state.Store{Dir: filepath.Join(dir, ".runner")}.Layout("j").Meta); err != nil {
		args = []string{"run", "--nats", url, "--queue", "chaos", "--nats-batch", "2", "--job-id", "j", "chaos.yml"}
	}
	cmd, _, exited := startRunner(t, dir, args...)
	return cmd, exited
}

// natsEnded waits for a coordinator of the job and checks that it ended
// with the items in the DLQ (exit 3).
func natsEnded(t *testing.T, cmd *exec.Cmd, exited <-chan struct{}) {
	t.Helper()
	waitExit(t, exited)
	if code := cmd.ProcessState.ExitCode(); code != 3 {
		t.Fatalf("runner %s: exit %d, want 3 (items in the DLQ)", strings.Join(cmd.Args[1:], " "), code)
	}
}

// natsFinish resumes the job until it has ended (a kill may have come
// after its end was recorded), checks the end state (every item succeeded
// but the failing ones, which are in the DLQ) and returns the runs of
// runs.log.
func natsFinish(t *testing.T, dir, url string) map[string][]*natsRun {
	t.Helper()
	store := state.Store{Dir: filepath.Join(dir, ".runner")}
	if job, err := store.Open("j"); err != nil || job.Meta.Status != state.Completed {
		cmd, exited := natsCoordinator(t, dir, url)
		natsEnded(t, cmd, exited)
	}
	counts := auditJob(t, store, "j", natsChaosItems, true)
	if counts[state.ItemDLQ] != natsChaosFailing || counts[state.ItemSucceeded] != natsChaosItems-natsChaosFailing {
		t.Errorf("end state %v, want %d succeeded and %d in the DLQ", counts, natsChaosItems-natsChaosFailing, natsChaosFailing)
	}
	return natsRuns(t, filepath.Join(dir, "runs.log"))
}

// parallelRounds runs round as parallel subtests, chaos(t, 10, 0) of them
// (none with -short), each with its own randomness drawn from the test's
// seed.
func parallelRounds(t *testing.T, round func(t *testing.T, rng *rand.Rand)) {
	rounds, rng := chaos(t, 10, 0)
	seeds := make([]uint64, rounds)
	for r := range seeds {
		seeds[r] = rng.Uint64()
	}
	for r := range rounds {
		t.Run(fmt.Sprintf("round%d", r), func(t *testing.T) {
			t.Parallel()
			round(t, rand.New(rand.NewPCG(seeds[r], 0)))
		})
	}
}

// startNATSWorkers starts n workers of the chaos queue on url in dir,
// named prefix1..n, with flags added.
func startNATSWorkers(t *testing.T, dir, url, prefix string, n int, flags ...string) []*testWorker {
	var ws []*testWorker
	for i := range n {
		ws = append(ws, startWorkerArgs(t, dir, url, "chaos", fmt.Sprintf("%s%d", prefix, i+1), nil, flags...))
	}
	return ws
}

// TestNATSCoordinatorChaos kills the coordinator (`runner run --nats`,
// then `runner resume`) with kill -9 one to three times per round, at
// random moments while items are out; after each crash every item is
// exactly one of succeeded, in the DLQ or pending, and in the end every
// item ran exactly once: a resume adopts the tasks still out, records the
// results that came meanwhile and publishes only what has neither
// (§11.9.4).
func TestNATSCoordinatorChaos(t *testing.T) {
	skipNATSProcesses(t, "")
	t.Parallel()
	parallelRounds(t, func(t *testing.T, rng *rand.Rand) {
		srv := natstest.Start(t)
		dir := natsJob(t, "chaos.yml", natsChaosWorkflow)
		runsLog := filepath.Join(dir, "runs.log")
		startNATSWorkers(t, dir, srv.URL(), "w", 2)
		store := state.Store{Dir: filepath.Join(dir, ".runner")}
		crashes := 1 + rng.IntN(3)
		for range crashes {
			cmd, exited := natsCoordinator(t, dir, srv.URL())
			before := len(readLines(t, runsLog))
			waitForLines(runsLog, before+1+rng.IntN(12), exited)
			_ = cmd.Process.Signal(syscall.SIGKILL)
			<-exited
			auditJob(t, store, "j", natsChaosItems, false)
		}
		for item, runs := range natsFinish(t, dir, srv.URL()) {
			if len(runs) != 1 {
				t.Errorf("item %s ran %d times, want once: coordinator crashes add no runs", item, len(runs))
			}
		}
		t.Logf("%d coordinator crashes, every item ran once", crashes)
	})
}

// TestNATSWorkerChaos kills random workers of three with kill -9 while a
// job runs, and starts new ones: every item ends exactly once, the extra
// runs are at most the killed workers' items in flight, and an item a
// killed worker was running starts again only once the server has given
// up on it: at least ack_wait after the last heartbeat of it the server
// answered, as the killed worker's log (-v) tells (§11.9.3). The kill's
// own time bounds nothing: a heartbeat due before it may have been sent
// late, or not at all, on a loaded machine.
func TestNATSWorkerChaos(t *testing.T) {
	skipNATSProcesses(t, "")
	t.Parallel()
	parallelRounds(t, func(t *testing.T, rng *rand.Rand) {
		srv := natstest.Start(t)
		dir := natsJob(t, "chaos.yml", natsChaosWorkflow)
		runsLog := filepath.Join(dir, "runs.log")
		workers := startNATSWorkers(t, dir, srv.URL(), "w", 3, "-v")
		cmd, exited := natsCoordinator(t, dir, srv.URL())
		var killed []*testWorker
		var killedAt []time.Time
		for k := range 1 + rng.IntN(3) {
			waitForLines(runsLog, len(readLines(t, runsLog))+1+rng.IntN(8), exited)
			i := rng.IntN(len(workers))
			_ = workers[i].Process.Signal(syscall.SIGKILL)
			<-workers[i].exited
			killed, killedAt = append(killed, workers[i]), append(killedAt, time.Now())
			workers[i] = startWorkerArgs(t, dir, srv.URL(), "chaos", fmt.Sprintf("r%d", k+1), nil, "-v")
		}
		natsEnded(t, cmd, exited)
		runs := natsFinish(t, dir, srv.URL())
		extra := 0
		for _, item := range runs {
			extra += len(item) - 1
		}
		bounded := 0
		for k, w := range killed {
			bounded += checkRedeliveries(t, w, killedAt[k], runs)
		}
		if max := len(killed) * natsChaosSlots; extra > max {
			t.Errorf("%d extra runs for %d killed workers of %d slots, want at most %d", extra, len(killed), natsChaosSlots, max)
		}
		t.Logf("%d workers killed, %d extra runs, %d of them after a heartbeat answered", len(killed), extra, bounded)
	})
}

// natsClockTolerance is how much earlier than its ack_wait the server may
// redeliver a task: its timers' granularity.
const natsClockTolerance = 50 * time.Millisecond

// checkRedeliveries checks each item the killed worker w was running
// when it was killed at (its last run of it has no end line, or one
// written after the kill) against the item's next run: it starts no
// earlier than ack_wait after the sending of the last heartbeat of it the
// server answered, the latest moment the server's clock of the task is
// known to have restarted. An item of which no heartbeat was answered is
// bounded by nothing the test knows (the server's delivery came before
// the run's start line, by how much it cannot tell). It returns how many
// items it checked.
func checkRedeliveries(t *testing.T, w *testWorker, at time.Time, runs map[string][]*natsRun) int {
	t.Helper()
	checked := 0
	beats := answeredBeats(t, w.log)
	for item, itemRuns := range runs {
		i := slices.IndexFunc(itemRuns, func(r *natsRun) bool { return r.worker == w.name })
		last := beats[item]
		if i < 0 || len(last) == 0 || !itemRuns[i].end.IsZero() && itemRuns[i].end.Before(at) {
			continue
		}
		if i == len(itemRuns)-1 {
			t.Errorf("item %s: worker %s was killed while running it, and it never ran again", item, w.name)
			continue
		}
		checked++
		next := itemRuns[i+1]
		sent := last[len(last)-1].sent
		if earliest := sent.Add(natsAckWait - natsClockTolerance); next.start.Before(earliest) {
			t.Errorf("item %s started again on %s %v after the last heartbeat of it worker %s sent that the server answered, before ack_wait (%v); its heartbeats (sent, answered) after its start:\n%s",
				item, next.worker, next.start.Sub(sent), w.name, natsAckWait, formatBeats(itemRuns[i].start, last))
		}
	}
	return checked
}

// natsBeat is a heartbeat a worker sent and the server answered.
type natsBeat struct{ sent, answered time.Time }

// answeredBeats reads a worker's log (-v): the heartbeats the server
// answered, by item, in order.
func answeredBeats(t *testing.T, log string) map[string][]natsBeat {
	t.Helper()
	beats := map[string][]natsBeat{}
	for _, line := range readLines(t, log) {
		// runner worker W: job J item I: heartbeat sent T answered T,
		// or "items I1,I2" for a batch of several: each item's beat.
		f := strings.Fields(line)
		if len(f) != 12 || f[7] != "heartbeat" {
			continue
		}
		sent, err1 := time.Parse(time.RFC3339Nano, f[9])
		answered, err2 := time.Parse(time.RFC3339Nano, f[11])
		if err1 != nil || err2 != nil {
			t.Fatalf("%s: heartbeat line %q: %v %v", log, line, err1, err2)
		}
		for item := range strings.SplitSeq(strings.TrimSuffix(f[6], ":"), ",") {
			beats[item] = append(beats[item], natsBeat{sent, answered})
		}
	}
	return beats
}

// formatBeats lists beats as times after from, one a line.
func formatBeats(from time.Time, beats []natsBeat) string {
	var b strings.Builder
	for _, beat := range beats {
		fmt.Fprintf(&b, "  %v %v\n", beat.sent.Sub(from), beat.answered.Sub(from))
	}
	return b.String()
}

// TestNATSWorkerLogsBeats checks what TestNATSWorkerChaos reads: a worker
// run with -v logs the heartbeats the server answered, each sent before it
// was answered.
func TestNATSWorkerLogsBeats(t *testing.T) {
	skipNATSProcesses(t, "")
	t.Parallel()
	srv := natstest.Start(t)
	dir := natsJob(t, "beat.yml", "mode: mapreduce\nmap:\n  input: seq 1 1\n  agent_template:\n    - shell: sleep 1.5\n")
	w := startWorkerArgs(t, dir, srv.URL(), "beat", "w", nil, "-v")
	run, out, exited := startRunner(t, dir, "run", "--nats", srv.URL(), "--queue", "beat", "--job-id", "j", "beat.yml")
	waitExit(t, exited)
	if code := run.ProcessState.ExitCode(); code != 0 {
		t.Fatalf("run: exit %d\n%s", code, out)
	}
	beats := answeredBeats(t, w.log)["1"]
	if len(beats) == 0 {
		t.Fatalf("no heartbeat logged by a worker with -v in a run of 1.5 s:\n%s", strings.Join(readLines(t, w.log), "\n"))
	}
	for _, b := range beats {
		if b.answered.Before(b.sent) {
			t.Errorf("heartbeat sent %v answered %v, before it was sent", b.sent, b.answered)
		}
	}
}

// TestNATSServerChaos kills the NATS server with kill -9 once or twice
// while a job runs and starts it again on its store after 0 to 3 s: the
// job ends (nothing waits for ever on a server that went away), nothing
// is lost, and the extra runs are at most max_parallel per crash
// (§11.9.5).
func TestNATSServerChaos(t *testing.T) {
	skipNATSProcesses(t, "")
	t.Parallel()
	parallelRounds(t, func(t *testing.T, rng *rand.Rand) {
		dir := natsJob(t, "chaos.yml", natsChaosWorkflow)
		srv := natstest.Process(t, t.TempDir(), 0)
		runsLog := filepath.Join(dir, "runs.log")
		startNATSWorkers(t, dir, srv.URL(), "w", 2)
		cmd, exited := natsCoordinator(t, dir, srv.URL())
		crashes := 1 + rng.IntN(2)
		for range crashes {
			waitForLines(runsLog, len(readLines(t, runsLog))+1+rng.IntN(10), exited)
			srv.Kill()
			time.Sleep(time.Duration(rng.IntN(3000)) * time.Millisecond)
			srv.Restart()
		}
		natsEnded(t, cmd, exited)
		extra := 0
		for _, runs := range natsFinish(t, dir, srv.URL()) {
			extra += len(runs) - 1
		}
		if max := crashes * natsChaosWindow; extra > max {
			t.Errorf("%d extra runs for %d server crashes at max_parallel %d, want at most %d", extra, crashes, natsChaosWindow, max)
		}
		t.Logf("%d server crashes, %d extra runs", crashes, extra)
	})
}

// TestNATSServerStoreLost kills the NATS server with kill -9 while a job
// runs on two workers and starts it again on a new, empty store (its -sd
// lost: no stream, consumer, bucket or task left): the live workers and
// the live coordinator notice, make the NATS objects again, the
// coordinator puts its spec back and sends again the tasks it has no
// result for, and the job ends with no item lost and at most max_parallel
// extra runs (the items in flight).
func TestNATSServerStoreLost(t *testing.T) {
	skipNATSProcesses(t, "waits for the coordinator and the workers to find the server's store lost")
	t.Parallel()
	dir := natsJob(t, "chaos.yml", natsChaosWorkflow)
	srv := natstest.Process(t, t.TempDir(), 0)
	runsLog := filepath.Join(dir, "runs.log")
	startNATSWorkers(t, dir, srv.URL(), "w", 2)
	cmd, exited := natsCoordinator(t, dir, srv.URL())
	waitForLines(runsLog, 8, exited)
	srv.Kill()
	srv.RestartEmpty()
	natsEnded(t, cmd, exited)
	extra := 0
	for _, runs := range natsFinish(t, dir, srv.URL()) {
		extra += len(runs) - 1
	}
	if extra > natsChaosWindow {
		t.Errorf("%d extra runs after the store was lost, at max_parallel %d: want at most %d", extra, natsChaosWindow, natsChaosWindow)
	}
	t.Logf("%d extra runs", extra)
}
