package e2e

import (
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/runnerdev/runner/internal/natstest"
	"github.com/runnerdev/runner/internal/state"
)

// natsChaosWorkflow's items log their start and end with the worker and
// the time; every seventh fails (to the DLQ).
const natsChaosWorkflow = `mode: mapreduce
map:
  input: seq 1 24
  max_parallel: 4
  agent_template:
    - shell: |
        echo "start ${item} $RUNNER_WORKER $(date +%s%N)" >> runs.log
        sleep 0.$((RANDOM % 3 + 2))
        echo "end ${item} $RUNNER_WORKER $(date +%s%N)" >> runs.log
        [ $((${item} % 7)) -ne 0 ]
`

const (
	natsChaosItems   = 24
	natsChaosFailing = 3 // 7, 14, 21
	natsChaosAckWait = 2 * time.Second
	natsChaosBeat    = natsChaosAckWait / 6
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
// exists) of chaos.yml on url and returns it with a channel closed when it
// exits.
func natsCoordinator(t *testing.T, dir, url string) (*exec.Cmd, <-chan struct{}) {
	t.Helper()
	args := []string{"resume", "j"}
	if _, err := os.Stat(state.Store{Dir: filepath.Join(dir, ".runner")}.Layout("j").Meta); err != nil {
		args = []string{"run", "--nats", url, "--queue", "chaos", "--job-id", "j", "chaos.yml"}
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
// named prefix1..n.
func startNATSWorkers(t *testing.T, dir, url, prefix string, n int) []*testWorker {
	var ws []*testWorker
	for i := range n {
		ws = append(ws, startWorker(t, dir, url, "chaos", fmt.Sprintf("%s%d", prefix, i+1)))
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
// up on it: at least ack_wait after its last heartbeat, which came at most
// a heartbeat before the kill (§11.9.3).
func TestNATSWorkerChaos(t *testing.T) {
	skipNATSProcesses(t, "")
	t.Parallel()
	parallelRounds(t, func(t *testing.T, rng *rand.Rand) {
		srv := natstest.Start(t)
		dir := natsJob(t, "chaos.yml", natsChaosWorkflow)
		runsLog := filepath.Join(dir, "runs.log")
		workers := startNATSWorkers(t, dir, srv.URL(), "w", 3)
		cmd, exited := natsCoordinator(t, dir, srv.URL())
		type kill struct {
			worker string
			at     time.Time
		}
		var kills []kill
		for k := range 1 + rng.IntN(3) {
			waitForLines(runsLog, len(readLines(t, runsLog))+1+rng.IntN(8), exited)
			i := rng.IntN(len(workers))
			name := workers[i].name
			_ = workers[i].Process.Signal(syscall.SIGKILL)
			kills = append(kills, kill{name, time.Now()})
			workers[i] = startWorker(t, dir, srv.URL(), "chaos", fmt.Sprintf("r%d", k+1))
		}
		natsEnded(t, cmd, exited)
		extra := 0
		for item, runs := range natsFinish(t, dir, srv.URL()) {
			extra += len(runs) - 1
			for i, run := range runs[:len(runs)-1] {
				next := runs[i+1]
				for _, k := range kills {
					if k.worker != run.worker || !run.end.IsZero() && run.end.Before(k.at) {
						continue
					}
					if earliest := k.at.Add(-natsChaosBeat + natsChaosAckWait - 100*time.Millisecond); next.start.Before(earliest) {
						t.Errorf("item %s started again %v after worker %s was killed, before ack_wait less a heartbeat", item, next.start.Sub(k.at), k.worker)
					}
				}
			}
		}
		if max := len(kills) * natsChaosSlots; extra > max {
			t.Errorf("%d extra runs for %d killed workers of %d slots, want at most %d", extra, len(kills), natsChaosSlots, max)
		}
		t.Logf("%d workers killed, %d extra runs", len(kills), extra)
	})
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
