package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/runnerdev/runner/internal/natsconn"
	"github.com/runnerdev/runner/internal/natstest"
	"github.com/runnerdev/runner/internal/state"
)

// natsClusterWorkflow is natsChaosWorkflow whose failing items succeed
// once the file fixed exists, for a dlq retry.
var natsClusterWorkflow = strings.Replace(natsChaosWorkflow, `[ $((${item} % 7)) -ne 0 ]`, `[ $((${item} % 7)) -ne 0 ] || [ -e fixed ]`, 1)

// TestNATSClusterLeaderKilled runs a job on a cluster of three NATS server
// processes, whose streams runner makes with three replicas, and kills -9
// the server that leads one of them (drawn at random) at a random point
// of the job, and again (the server back on its store) the tasks stream's
// leader mid-`dlq retry`: each ends, no item is lost, and the extra runs
// are at most the items in flight. Three rounds; make chaos runs more.
func TestNATSClusterLeaderKilled(t *testing.T) {
	skipNATSProcesses(t, "starts clusters of three servers and waits for them to elect leaders")
	t.Parallel()
	rounds, rng := chaos(t, 3, 0)
	for r := range rounds {
		t.Run(fmt.Sprintf("round%d", r), func(t *testing.T) {
			clusterLeaderKilled(t, rng.IntN(3), 2+rng.IntN(20))
		})
	}
}

// clusterLeaderKilled is a round of TestNATSClusterLeaderKilled: it kills
// the leader of the stream of runner's at index victim (tasks, results,
// the jobs bucket) once runs.log has after lines, and that of the tasks
// stream at the dlq retry's first run.
func clusterLeaderKilled(t *testing.T, victim, after int) {
	stream := []string{natsconn.TasksStream, natsconn.ResultsStream, "KV_" + natsconn.JobsBucket}[victim]
	dir := natsJob(t, "chaos.yml", natsClusterWorkflow)
	cluster := natstest.ProcessCluster(t, t.TempDir(), 3)
	url := cluster.URL()
	runsLog := filepath.Join(dir, "runs.log")
	// An ack_wait of 10 s (30 s by default) outlasts the election of new
	// leaders on this machine: the runs in flight keep their leases.
	for _, name := range []string{"w1", "w2"} {
		startWorkerArgs(t, dir, url, "chaos", name, nil, "--ack-wait", "10s")
	}
	cmd, out, exited := startRunner(t, dir, "run", "--nats", url, "--queue", "chaos", "--job-id", "j", "chaos.yml")
	waitForLines(runsLog, after, exited)
	leader := cluster.StreamLeader(t, stream)
	leader.Kill()
	natsEnded(t, cmd, exited)
	if !strings.Contains(out.String(), "NATS streams: R3\n") {
		t.Errorf("runner run did not say the streams are R3:\n%s", out)
	}
	extra := 0
	for _, runs := range natsFinish(t, dir, url) {
		extra += len(runs) - 1
	}
	if extra > natsChaosWindow {
		t.Errorf("%d extra runs after the leader of %s was killed, at max_parallel %d: want at most %d", extra, stream, natsChaosWindow, natsChaosWindow)
	}
	t.Logf("run: the leader of %s killed after %d lines of runs.log: %d extra runs", stream, after, extra)

	leader.Restart()
	before := len(readLines(t, runsLog))
	if err := os.WriteFile(filepath.Join(dir, "fixed"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	retry, out, exited := startRunner(t, dir, "dlq", "retry", "j")
	waitForLines(runsLog, before+1, exited)
	cluster.StreamLeader(t, natsconn.TasksStream).Kill()
	waitExit(t, exited)
	if code := retry.ProcessState.ExitCode(); code != 0 {
		t.Fatalf("runner dlq retry: exit %d, want 0\n%s", code, out)
	}
	retried := map[string]int{}
	for _, line := range readLines(t, runsLog)[before:] {
		if f := strings.Fields(line); len(f) == 4 && f[0] == "end" {
			retried[f[1]]++
		}
	}
	for _, item := range []string{"7", "14", "21"} {
		if retried[item] == 0 {
			t.Errorf("item %s did not run to its end in the dlq retry: %v", item, retried)
		}
	}
	if n := len(retried); n != natsChaosFailing {
		t.Errorf("the dlq retry ran items %v, want the %d in the DLQ", retried, natsChaosFailing)
	}
	starts := 0
	for _, line := range readLines(t, runsLog)[before:] {
		if strings.HasPrefix(line, "start ") {
			starts++
		}
	}
	if extra := starts - natsChaosFailing; extra > natsChaosFailing {
		t.Errorf("%d extra runs in the dlq retry of %d items", extra, natsChaosFailing)
	}
	counts := auditJob(t, state.Store{Dir: filepath.Join(dir, ".runner")}, "j", natsChaosItems, true)
	if counts[state.ItemSucceeded] != natsChaosItems {
		t.Errorf("after the dlq retry: %v, want all %d items succeeded", counts, natsChaosItems)
	}
	t.Logf("dlq retry: %d extra runs", starts-natsChaosFailing)
}
