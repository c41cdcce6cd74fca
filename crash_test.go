package main

import (
	"bufio"
	"errors"
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

	bolt "go.etcd.io/bbolt"

	"github.com/runnerdev/runner/cmd"
	"github.com/runnerdev/runner/dlq"
	"github.com/runnerdev/runner/workflow/state"
)

// crashItems and crashParallel shape the job each crash round runs.
const (
	crashItems    = 40
	crashParallel = 4
)

// crashWorkflow runs 40 items, 4 at a time, with delays of 0-40 ms; the
// items whose number is a multiple of 7 always fail.
const crashWorkflow = `name: crash
mode: mapreduce
setup:
  - shell: seq 1 40 > items.txt
map:
  input: items.txt
  max_parallel: 4
  agent_template:
    - shell: |
        echo "${item}" >> runs.log
        sleep 0.0$(( ${item} % 5 ))
        [ $(( ${item} % 7 )) -ne 0 ]
reduce:
  - shell: echo reduced >> reduce.log
`

// TestCrashResume kills a running MapReduce job with SIGKILL at random
// moments, one to three times per round, resuming it after each crash,
// and checks after every crash and at the end that no item is lost or
// doubled: each is exactly one of succeeded, in the DLQ, skipped or
// pending; the DLQ holds exactly the items that always fail; the bbolt
// file checks clean; and no crash causes more than max_parallel repeated
// executions. RUNNER_CHAOS_ROUNDS sets the number of rounds (default 20;
// 2 with -short).
func TestCrashResume(t *testing.T) {
	rounds, rng := chaos(t, 20)
	for r := range rounds {
		t.Run(fmt.Sprintf("round%d", r), func(t *testing.T) {
			crashRound(t, rng)
		})
	}
}

// chaos returns the number of rounds of a kill test (RUNNER_CHAOS_ROUNDS,
// else def, at most 2 with -short) and its randomness, seeded from
// RUNNER_CHAOS_SEED or the clock (and logged, to repeat a run).
func chaos(t *testing.T, def int) (rounds int, rng *rand.Rand) {
	rounds = def
	if testing.Short() {
		rounds = min(def, 2)
	}
	if s := os.Getenv("RUNNER_CHAOS_ROUNDS"); s != "" {
		rounds, _ = strconv.Atoi(s)
	}
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d (set RUNNER_CHAOS_SEED to repeat)", seed)
	if s := os.Getenv("RUNNER_CHAOS_SEED"); s != "" {
		seed, _ = strconv.ParseUint(s, 10, 64)
	}
	return rounds, rand.New(rand.NewPCG(seed, 0))
}

func crashRound(t *testing.T, rng *rand.Rand) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "crash.yml"), []byte(crashWorkflow), 0o600); err != nil {
		t.Fatal(err)
	}
	crashes := 1 + rng.IntN(3)
	store := state.Store{Dir: filepath.Join(dir, ".runner")}
	for range crashes {
		run := exec.Command("runner", continueJob(store)...)
		run.Dir = dir
		if err := run.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Duration(20+rng.IntN(400)) * time.Millisecond)
		sig := syscall.SIGKILL
		if rng.IntN(4) == 0 {
			sig = syscall.SIGINT // an interrupt must leave the same guarantees
		}
		run.Process.Signal(sig)
		run.Wait()
		auditJob(t, store, "j", crashItems, false)
	}
	time.Sleep(100 * time.Millisecond) // agents orphaned by the last crash finish
	switch code, out := runnerIn(t, dir, continueJob(store)...); {
	case code == 0:
		// every item had already finished, or the reduce just ran
	case code == cmd.ExitItemsInDLQ:
	case code == 2 && strings.Contains(out, "already completed"):
		// the job completed before the last crash
	default:
		t.Fatalf("final resume: exit %d\n%s", code, out)
	}
	counts := auditJob(t, store, "j", crashItems, true)
	failing := crashItems / 7
	if counts[state.ItemDLQ] != failing || counts[state.ItemSucceeded] != crashItems-failing {
		t.Errorf("end state %v, want %d succeeded and %d in the DLQ", counts, crashItems-failing, failing)
	}
	runs := readLines(t, filepath.Join(dir, "runs.log"))
	if extra := len(runs) - crashItems; extra > crashParallel*crashes || extra < 0 {
		t.Errorf("%d executions of %d items after %d crashes: more than %d repeated per crash", len(runs), crashItems, crashes, crashParallel)
	}
	if reduced := readLines(t, filepath.Join(dir, "reduce.log")); len(reduced) == 0 {
		t.Error("reduce never ran")
	}
}

// continueJob is the command line that carries job j of crash.yml on:
// resume, or run when a kill came before the job existed.
func continueJob(store state.Store) []string {
	if _, err := store.Open("j"); errors.Is(err, state.ErrNotFound) {
		return []string{"run", "--job-id", "j", "crash.yml"}
	}
	return []string{"resume", "j"}
}

// auditJob classifies every item of a job (total items with default ids)
// from its files and fails on any item that is not exactly one of
// succeeded, in the DLQ, skipped or pending. With final, no item may be
// pending. It returns the count per class.
func auditJob(t *testing.T, store state.Store, jobID string, total int, final bool) map[string]int {
	t.Helper()
	job, err := store.Open(jobID)
	if errors.Is(err, state.ErrNotFound) && !final {
		return nil // killed before the job was created
	}
	if err != nil {
		t.Fatal(err)
	}
	ids := readLines(t, job.Path("items.jsonl"))
	if len(ids) == 0 && !final {
		return nil // killed before the items were loaded: all pending
	}
	if len(ids) != total {
		t.Fatalf("items file has %d items, want %d", len(ids), total)
	}
	states, err := job.ReadItemStates()
	if err != nil {
		t.Fatal(err)
	}
	checkBolt(t, job.Path("dlq.db"))
	d, err := dlq.Open(job.Path("dlq.db"), dlq.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	queued := map[string]bool{}
	if err := d.List(func(it dlq.Item) bool { queued[it.ItemID] = true; return true }); err != nil {
		t.Fatal(err)
	}
	counts := map[string]int{}
	for i := range total {
		id := "item_" + strconv.Itoa(i)
		st, in := states[i].State, queued[id]
		delete(queued, id)
		var class string
		switch {
		case st == state.ItemSucceeded && !in, st == state.ItemSkipped && !in:
			class = st
		case in && (st == state.ItemDLQ || st == state.ItemRunning || st == ""):
			class = state.ItemDLQ // running + queued: failed just before the crash
		case !in && (st == state.ItemRunning || st == ""):
			class = "pending"
		default:
			t.Fatalf("item %s is %q in the item log and queued=%v in the DLQ", id, st, in)
		}
		counts[class]++
	}
	if len(queued) > 0 {
		t.Fatalf("DLQ holds items that are not the job's: %v", queued)
	}
	if final && counts["pending"] > 0 {
		t.Fatalf("%d items still pending after the final resume", counts["pending"])
	}
	return counts
}

// readLines returns a file's lines (none if it does not exist).
func readLines(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	return lines
}

// checkBolt runs bbolt's consistency check on the file at path, if there
// is one (List, which the audit calls next, decodes every item).
func checkBolt(t *testing.T, path string) {
	t.Helper()
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		return
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatalf("dlq check: %v", err)
	}
	defer db.Close()
	db.View(func(tx *bolt.Tx) error {
		for err := range tx.Check() {
			t.Errorf("dlq check: %v", err)
		}
		return nil
	})
}
