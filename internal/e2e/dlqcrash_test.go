package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/runnerdev/runner/cmd"
	"github.com/runnerdev/runner/dlq"
	"github.com/runnerdev/runner/internal/state"
	"github.com/runnerdev/runner/internal/testkit"
)

// retryCrashWorkflow fails its 40 items until the file "fixed" exists,
// then runs them 4 at a time in 0-40 ms each.
const retryCrashWorkflow = `name: retrycrash
mode: mapreduce
setup:
  - shell: seq 1 40 > items.txt
map:
  input: items.txt
  max_parallel: 4
  agent_template:
    - shell: |
        [ -f fixed ] || exit 1
        echo "${item_id}" >> runs.log
        sleep 0.0$(( ${item} % 5 ))
`

// TestDLQRetryCrash kills `dlq retry` with SIGKILL at random moments and
// checks that the next retry never runs an item again that had already
// succeeded (a kill between logging the success and removing the item
// from the DLQ left it in both), and that after a last full retry the
// DLQ is empty and the job's counts add up with exit code 0.
// RUNNER_CHAOS_ROUNDS sets the number of kills (default 8; none with -short).
func TestDLQRetryCrash(t *testing.T) {
	kills, rng := chaos(t, 8, 0)
	dir := fixedJob(t, retryCrashWorkflow)
	store := state.Store{Dir: filepath.Join(dir, ".runner")}
	job, err := store.Open("j")
	if err != nil {
		t.Fatal(err)
	}
	leftBoth, reruns := 0, 0
	for range kills {
		done := succeededItems(t, job)
		before := len(readLines(t, filepath.Join(dir, "runs.log")))
		retry := exec.Command("runner", "dlq", "retry", "j")
		retry.Dir = dir
		if err := retry.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Duration(20+rng.IntN(300)) * time.Millisecond)
		retry.Process.Signal(syscall.SIGKILL)
		retry.Wait()
		for _, id := range readLines(t, filepath.Join(dir, "runs.log"))[before:] {
			if done[id] {
				reruns++
			}
		}
		queued := queuedItems(t, job)
		for id := range succeededItems(t, job) {
			if queued[id] {
				leftBoth++
			}
		}
	}
	waitOrphansGone(t, dir)
	t.Logf("%d kills left %d item(s) both succeeded and in the DLQ; later retries ran %d succeeded item(s) again", kills, leftBoth, reruns)
	if reruns > 0 {
		t.Errorf("retries ran %d item(s) again that had already succeeded", reruns)
	}
	if code, out := runnerIn(t, dir, "dlq", "retry", "j"); code != 0 {
		t.Fatalf("final retry: exit %d\n%s", code, out)
	}
	if q := queuedItems(t, job); len(q) > 0 {
		t.Errorf("DLQ still holds %d item(s) after the final retry", len(q))
	}
	_, out := runnerIn(t, dir, "jobs", "--json")
	var metas []state.Meta
	if err := json.Unmarshal([]byte(out), &metas); err != nil || len(metas) != 1 || metas[0].Items == nil {
		t.Fatalf("jobs --json: %v\n%s", err, out)
	}
	m := metas[0]
	if c := *m.Items; c.Succeeded != 40 || c.DLQ != 0 || c.Skipped != 0 || c.Pending != 0 || m.ExitCode != 0 || m.Error != "" {
		t.Errorf("job after the final retry: %+v, exit code %d, error %q; want 40 succeeded, exit code 0", c, m.ExitCode, m.Error)
	}
}

// fixedJob runs job j of a workflow whose items fail until the file
// "fixed" exists, in a directory of its own, then makes that file; it
// returns the directory.
func fixedJob(t *testing.T, workflow string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "w.yml"), []byte(workflow), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, out := runnerIn(t, dir, "run", "--job-id", "j", "w.yml"); code != cmd.ExitItemsInDLQ {
		t.Fatalf("run: exit %d\n%s", code, out)
	}
	if err := os.WriteFile(filepath.Join(dir, "fixed"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	return dir
}

// succeededItems returns the items whose last record in the item log is
// "succeeded".
func succeededItems(t *testing.T, job *state.Job) map[string]bool {
	t.Helper()
	states, err := job.ReadItemStates()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, rec := range states {
		if rec.State == state.ItemSucceeded {
			out[rec.ID] = true
		}
	}
	return out
}

// queuedItems returns the items in the job's DLQ.
func queuedItems(t *testing.T, job *state.Job) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	for id := range dlqItems(t, job) {
		out[id] = true
	}
	return out
}

// dlqItems reads a job's DLQ: each item's failures.
func dlqItems(t *testing.T, job *state.Job) map[string][]dlq.Failure {
	t.Helper()
	d, err := dlq.Open(job.Layout().DLQ, dlq.Options{ReadOnly: true, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	out := map[string][]dlq.Failure{}
	if err := d.List(func(it dlq.Item) bool { out[it.ItemID] = it.Failures; return true }); err != nil {
		t.Fatal(err)
	}
	return out
}

// killedRetryWorkflow fails its 12 items until the file "fixed" exists,
// then logs each item it runs and takes 0.2 s over it.
const killedRetryWorkflow = `name: killedretry
mode: mapreduce
map:
  input: seq 1 12
  max_parallel: 2
  agent_template:
    - shell: |
        [ -f fixed ] || exit 1
        echo "${item_id}" >> runs.log
        sleep 0.2
`

// After a dlq retry killed with -9 half way, `runner jobs` shows the
// job's counts as its DLQ and item log are, not as the killed retry left
// its metadata when it started (every item in the DLQ): the items logged
// as succeeded count as succeeded, the others in the DLQ as in the DLQ, and
// the exit code and error follow.
func TestJobsCountsAfterKilledRetry(t *testing.T) {
	dir := fixedJob(t, killedRetryWorkflow)
	retry := exec.Command("runner", "dlq", "retry", "j")
	retry.Dir = dir
	if err := retry.Start(); err != nil {
		t.Fatal(err)
	}
	// Kill it once 5 items started.
	testkit.Poll(func() bool { return len(readLines(t, filepath.Join(dir, "runs.log"))) >= 5 })
	retry.Process.Signal(syscall.SIGKILL)
	retry.Wait()
	job, err := state.Store{Dir: filepath.Join(dir, ".runner")}.Open("j")
	if err != nil {
		t.Fatal(err)
	}
	succeeded, queued := succeededItems(t, job), queuedItems(t, job)
	inDLQ := 0
	for id := range queued {
		if !succeeded[id] {
			inDLQ++
		}
	}
	if len(succeeded) < 3 || inDLQ == 0 {
		t.Fatalf("the kill left %d item(s) succeeded and %d in the DLQ; want some of each", len(succeeded), inDLQ)
	}
	_, out := runnerIn(t, dir, "jobs", "--json")
	var metas []state.Meta
	if err := json.Unmarshal([]byte(out), &metas); err != nil || len(metas) != 1 || metas[0].Items == nil {
		t.Fatalf("jobs --json: %v\n%s", err, out)
	}
	m := metas[0]
	want := state.ItemCounts{Total: 12, Failed: 12, Succeeded: len(succeeded), DLQ: inDLQ, Pending: 12 - len(succeeded) - inDLQ}
	if *m.Items != want || m.ExitCode != cmd.ExitItemsInDLQ || !strings.HasPrefix(m.Error, fmt.Sprintf("%d item(s) in the dead-letter queue", inDLQ)) {
		t.Errorf("jobs --json after the kill: %+v, exit code %d, error %q; want %+v (the item log and DLQ), exit code 3 and %d item(s) in the error",
			*m.Items, m.ExitCode, m.Error, want, inDLQ)
	}
	if _, out := runnerIn(t, dir, "jobs"); !strings.Contains(out, fmt.Sprintf(" %d/12 items ", len(succeeded))) {
		t.Errorf("jobs after the kill:\n%s\nwant %d/12 items", out, len(succeeded))
	}
	if _, out := runnerIn(t, dir, "report", "j"); !strings.Contains(out, fmt.Sprintf("completed with %d item(s) in the DLQ", inDLQ)) {
		t.Errorf("report after the kill does not say %d item(s) are in the DLQ", inDLQ)
	}
}
