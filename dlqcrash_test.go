package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/runnerdev/runner/cmd"
	"github.com/runnerdev/runner/dlq"
	"github.com/runnerdev/runner/state"
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
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "crash.yml"), []byte(retryCrashWorkflow), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, out := runnerIn(t, dir, "run", "--job-id", "j", "crash.yml"); code != cmd.ExitItemsInDLQ {
		t.Fatalf("run: exit %d\n%s", code, out)
	}
	if err := os.WriteFile(filepath.Join(dir, "fixed"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
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
	time.Sleep(100 * time.Millisecond) // agents orphaned by the last kill finish
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
	d, err := dlq.Open(job.Path("dlq.db"), dlq.Options{ReadOnly: true, Timeout: 10 * time.Second})
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
