package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
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
	"github.com/runnerdev/runner/internal/runnertest"
	"github.com/runnerdev/runner/internal/state"
	"github.com/runnerdev/runner/internal/testkit"
)

// crashItems and crashParallel shape the job each crash round runs;
// crashExecutions is the number of step executions without a crash.
const (
	crashItems      = 28
	crashParallel   = 4
	crashExecutions = crashItems * 7 / 2
)

// crashWorkflow runs 28 items, 4 at a time, through three steps: a with a
// delay of 0-40 ms and a capture, b whose first attempt fails for even
// items and is retried after 200 ms (the item gives its slot back
// meanwhile, so more than 4 items are running), c that uses a's capture and
// fails for the multiples of 7. Each step logs one line per execution,
// unique in a run without crashes ("N a", "N b ATTEMPT", "N c receipt-N").
const crashWorkflow = `name: crash
mode: mapreduce
setup:
  - shell: seq 1 28 > items.txt
map:
  input: items.txt
  max_parallel: 4
  agent_template:
    - shell: |
        echo "${item} a" >> runs.log
        sleep 0.0$(( ${item} % 5 ))
        echo "receipt-${item}"
      capture_output: receipt
    - shell: |
        echo "${item} b ${RUNNER_ATTEMPT}" >> runs.log
        [ "${RUNNER_ATTEMPT}" -ge 2 ] || [ $(( ${item} % 2 )) -ne 0 ]
      retry_config: {attempts: 2, backoff: fixed, initial_delay: 200ms}
    - shell: |
        echo "${item} c ${receipt}" >> runs.log
        [ $(( ${item} % 7 )) -ne 0 ]
reduce:
  - shell: echo reduced >> reduce.log
`

// crashSteps are the template's steps as runs.log names them.
const crashSteps = "abc"

// TestCrashResume kills a running MapReduce job with SIGKILL (or SIGINT)
// at random moments, one to three times per round, resuming it after each
// crash, and checks after every crash and at the end that no item is lost
// or doubled: each is exactly one of succeeded, in the DLQ, skipped or
// pending; the DLQ holds exactly the items that always fail; the bbolt
// file checks clean. It also checks that resume continues items from the
// step that was running: no step that had completed before a crash runs
// again, captures are restored, and no crash causes more than max_parallel
// repeated step executions. RUNNER_CHAOS_ROUNDS sets the number of rounds
// (default 20; 1 with -short).
func TestCrashResume(t *testing.T) {
	rounds, rng := chaos(t, 20, 1)
	for r := range rounds {
		t.Run(fmt.Sprintf("round%d", r), func(t *testing.T) {
			crashRound(t, rng, false)
		})
	}
}

// TestCrashResumeAgents is TestCrashResume with the items run by `runner
// agent` processes (RUNNER_DISPATCH=agents), where the first crash of a
// round and half the others kill -9 an agent in the middle of a step
// first (see killBusyAgent), and a quarter of those leave the job to end
// without killing runner: the agent's item stays pending and is sent
// again, and the same checks hold.
func TestCrashResumeAgents(t *testing.T) {
	needProc(t)
	t.Setenv("RUNNER_DISPATCH", "agents")
	t.Setenv("GORACE", runnertest.RaceNoExitSleep())
	rounds, rng := chaos(t, 20, 0)
	kills := 0
	for r := range rounds {
		t.Run(fmt.Sprintf("round%d", r), func(t *testing.T) {
			kills += crashRound(t, rng, true)
		})
	}
	if kills == 0 {
		t.Error("no agent was killed in any round")
	}
}

// chaos returns the number of rounds of a kill test (RUNNER_CHAOS_ROUNDS,
// else def, or short with -short, where 0 skips the test) and its
// randomness, seeded from RUNNER_CHAOS_SEED or the clock (and logged, to
// repeat a run).
func chaos(t *testing.T, def, short int) (rounds int, rng *rand.Rand) {
	rounds = def
	if testing.Short() {
		rounds = short
		if short == 0 {
			t.Skip("-short: a full run has its rounds")
		}
	}
	if s := os.Getenv("RUNNER_CHAOS_ROUNDS"); s != "" {
		rounds, _ = strconv.Atoi(s)
	}
	return rounds, rand.New(rand.NewPCG(chaosSeed(t), 0))
}

// chaosSeed is the seed of a kill test's randomness: RUNNER_CHAOS_SEED
// (a bad one fails the test) or the clock's, logged as the one used so
// that the line repeats the run.
func chaosSeed(t testing.TB) uint64 {
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("RUNNER_CHAOS_SEED"); s != "" {
		var err error
		if seed, err = strconv.ParseUint(s, 10, 64); err != nil {
			t.Fatalf("RUNNER_CHAOS_SEED=%q: %v", s, err)
		}
	}
	t.Logf("seed %d (set RUNNER_CHAOS_SEED to repeat)", seed)
	return seed
}

// The seed a kill test logs is the one it uses: RUNNER_CHAOS_SEED's when
// set (issue 23.4: the clock's was logged before the variable was read).
func TestChaosSeedLogged(t *testing.T) {
	t.Setenv("RUNNER_CHAOS_SEED", "42")
	rec := &logRecorder{TB: t}
	if seed := chaosSeed(rec); seed != 42 {
		t.Errorf("seed %d, want 42", seed)
	}
	if want := "seed 42 (set RUNNER_CHAOS_SEED to repeat)"; len(rec.lines) != 1 || rec.lines[0] != want {
		t.Errorf("logged %q, want %q alone", rec.lines, want)
	}
}

// logRecorder is a test whose Logf lines are kept.
type logRecorder struct {
	testing.TB
	lines []string
}

func (r *logRecorder) Logf(format string, args ...any) {
	r.lines = append(r.lines, fmt.Sprintf(format, args...))
}

// crashRound runs one round of TestCrashResume, with agents if asked; it
// returns the number of agents killed.
func crashRound(t *testing.T, rng *rand.Rand, agents bool) (agentKills int) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "crash.yml"), []byte(crashWorkflow), 0o600); err != nil {
		t.Fatal(err)
	}
	crashes := 1 + rng.IntN(3)
	store := state.Store{Dir: filepath.Join(dir, ".runner")}
	runsLog := filepath.Join(dir, "runs.log")
	type crash struct {
		mark      int             // lines of runs.log when it happened
		completed map[string]bool // steps completed by then ("N a")
	}
	var past []crash
	for k := range crashes {
		run := exec.Command("runner", continueJob(store)...)
		run.Dir = dir
		before := len(readLines(t, runsLog))
		if err := run.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan struct{})
		go func() { run.Wait(); close(exited) }()
		if agents && (k == 0 || rng.IntN(2) == 0) {
			waitForLines(runsLog, before+1+rng.IntN(max(crashExecutions-before, 1)), exited)
			if killBusyAgent(t, store, run.Process.Pid, exited) {
				agentKills++
				// A crash for the checks below: steps completed by now
				// never run again.
				completed := completedSteps(t, store, "j")
				past = append(past, crash{len(readLines(t, runsLog)), completed})
				if rng.IntN(4) == 0 {
					waitExit(t, exited) // the job goes on to its end
					break
				}
			}
		}
		if rng.IntN(8) == 0 { // during setup or loading, most likely
			time.Sleep(time.Duration(rng.IntN(50)) * time.Millisecond)
		} else { // at a random point of the job's progress, however fast the machine
			waitForLines(runsLog, before+1+rng.IntN(max(crashExecutions-before, 1)), exited)
		}
		sig := syscall.SIGKILL
		if rng.IntN(4) == 0 {
			sig = syscall.SIGINT // an interrupt must leave the same guarantees
		}
		run.Process.Signal(sig)
		<-exited
		auditJob(t, store, "j", crashItems, false)
		past = append(past, crash{len(readLines(t, runsLog)), completedSteps(t, store, "j")})
	}
	waitOrphansGone(t, dir)
	finishJob(t, dir, store)
	counts := auditJob(t, store, "j", crashItems, true)
	failing := crashItems / 7
	if counts[state.ItemDLQ] != failing || counts[state.ItemSucceeded] != crashItems-failing {
		t.Errorf("end state %v, want %d succeeded and %d in the DLQ", counts, crashItems-failing, failing)
	}
	checkDLQFailures(t, store, "j")
	runs := readLines(t, runsLog)
	for k, c := range past {
		reached := map[string]int{} // item -> the furthest execution it had started
		for _, line := range runs[:c.mark] {
			item, rank := crashRank(line)
			reached[item] = max(reached[item], rank)
		}
		for _, line := range runs[c.mark:] {
			item, rank := crashRank(line)
			if step := item + " " + strings.Fields(line + " ?")[1]; c.completed[step] || rank < reached[item] {
				t.Errorf("%q ran again after crash %d, after the step had completed", line, k+1)
			}
		}
	}
	seen := map[string]int{}
	for _, line := range runs {
		seen[line]++
	}
	for i := 1; i <= crashItems; i++ {
		want := []string{fmt.Sprintf("%d a", i), fmt.Sprintf("%d b 1", i), fmt.Sprintf("%d c receipt-%d", i, i)}
		if i%2 == 0 {
			want = append(want, fmt.Sprintf("%d b 2", i))
		}
		for _, w := range want {
			if seen[w] == 0 {
				t.Errorf("runs.log lacks %q", w)
			}
		}
	}
	// A killed agent repeats the step it was running.
	repeated := len(runs) - len(seen)
	t.Logf("%d crash(es), %d agent(s) killed, %d step execution(s) repeated", crashes, agentKills, repeated)
	if len(seen) != crashExecutions || repeated > crashParallel*crashes+agentKills {
		t.Errorf("%d step executions, %d distinct (want %d), after %d crashes and %d agents killed: more than %d repeated per crash and one per agent",
			len(runs), len(seen), crashExecutions, crashes, agentKills, crashParallel)
	}
	if reduced := readLines(t, filepath.Join(dir, "reduce.log")); len(reduced) == 0 {
		t.Error("reduce never ran")
	}
	return agentKills
}

// finishJob carries job j of crash.yml in dir to its end after the last
// crash of a round (resume, or run when the kill came before the job
// existed).
func finishJob(t *testing.T, dir string, store state.Store) {
	t.Helper()
	switch code, out := runnerIn(t, dir, continueJob(store)...); {
	case code == 0:
		// every item had already finished, or the reduce just ran
	case code == cmd.ExitItemsInDLQ:
	case code == 2 && strings.Contains(out, "already completed"):
		// the job completed before the last crash
	default:
		t.Fatalf("final resume: exit %d\n%s", code, out)
	}
}

// waitExit waits for a job's process to end of itself (a bound on a whole
// job, which takes about a second).
func waitExit(t *testing.T, exited <-chan struct{}) {
	t.Helper()
	select {
	case <-exited:
	case <-time.After(testkit.Scale(2 * time.Minute)):
		t.Fatal("the job did not end within 2 minutes")
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

// auditJob classifies every item of a job (total items) from its files and fails on any item that is not exactly one of
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
	items := readLines(t, job.Layout().Items)
	if len(items) == 0 && !final {
		return nil // killed before the items were loaded: all pending
	}
	if len(items) != total {
		t.Fatalf("items file has %d items, want %d", len(items), total)
	}
	states, err := job.ReadItemStates()
	if err != nil {
		t.Fatal(err)
	}
	checkBolt(t, job.Layout().DLQ)
	queued := queuedItems(t, job)
	counts := map[string]int{}
	for i, line := range items {
		var item struct{ ID string }
		if err := json.Unmarshal([]byte(line), &item); err != nil {
			t.Fatalf("items file line %d: %v", i+1, err)
		}
		id := item.ID
		st, in := states[i].State, queued[id]
		delete(queued, id)
		var class string
		switch {
		case st == state.ItemSucceeded && !in, st == state.ItemSkipped && !in:
			class = st
		case st == state.ItemSucceeded && !final:
			// A dlq retry killed between logging the success and taking
			// the item out of the DLQ: the next settle takes it out.
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

// checkDLQFailures checks that each item in the job's DLQ failed once:
// an outcome recorded twice (a repeated or late result, or a failure
// recorded again after a crash) would add a second failure, and a runner
// lost in the middle of an item (a killed agent) none.
func checkDLQFailures(t *testing.T, store state.Store, jobID string) {
	t.Helper()
	job, err := store.Open(jobID)
	if err != nil {
		t.Fatal(err)
	}
	for id, failures := range dlqItems(t, job) {
		if len(failures) != 1 || failures[0].Kind != "exit" {
			t.Errorf("item %s has DLQ failures %+v, want one, of its command's exit", id, failures)
		}
	}
}

// crashRank splits a runs.log line into its item and the place of the
// execution in the item's order: a 0, b's attempts 1 and 2, c 3. An item
// that started one execution had completed those before it.
func crashRank(line string) (item string, rank int) {
	f := append(strings.Fields(line), "", "", "")
	switch f[1] {
	case "a":
		return f[0], 0
	case "b":
		n, _ := strconv.Atoi(f[2])
		return f[0], n
	}
	return f[0], 3
}

// waitForLines waits (at most 10 s) until the file has n lines or exited
// is closed.
func waitForLines(path string, n int, exited <-chan struct{}) {
	for deadline := time.Now().Add(testkit.Scale(10 * time.Second)); time.Now().Before(deadline); {
		if data, _ := os.ReadFile(path); bytes.Count(data, []byte("\n")) >= n {
			return
		}
		select {
		case <-exited:
			return
		case <-time.After(2 * time.Millisecond):
		}
	}
}

// waitOrphansGone waits until no process works in dir or below it: the
// agents and steps a killed runner left behind finish on their own. It
// fails the test if some still run a minute later.
func waitOrphansGone(t *testing.T, dir string) {
	t.Helper()
	if !waitUntil(func() bool { return len(processesIn(dir)) == 0 }, nil) {
		t.Fatalf("processes %v still work in %s a minute after their runner was killed", processesIn(dir), dir)
	}
}

// processesIn returns the live processes whose working directory is dir
// or below it.
func processesIn(dir string) []int {
	var pids []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cwd, err := os.Readlink("/proc/" + e.Name() + "/cwd")
		if err != nil || cwd != dir && !strings.HasPrefix(cwd, dir+string(filepath.Separator)) {
			continue
		}
		if stat := procStat(pid); len(stat) > 0 && stat[0] != "Z" {
			pids = append(pids, pid)
		}
	}
	return pids
}

// waitUntil polls cond until it holds or exited is closed (nil: never)
// and reports whether it held. A minute, far beyond what any condition
// waited on takes, only keeps a broken run from hanging the test.
func waitUntil(cond func() bool, exited <-chan struct{}) bool {
	for deadline := time.Now().Add(testkit.Scale(time.Minute)); time.Now().Before(deadline); {
		if cond() {
			return true
		}
		select {
		case <-exited:
			return cond()
		case <-time.After(5 * time.Millisecond):
		}
	}
	return cond()
}

// completedSteps returns the steps of the job's template ("N a" for item N
// and step a) that must never run again: every step of the items that
// ended and those a running item checkpointed as finished.
func completedSteps(t *testing.T, store state.Store, jobID string) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	job, err := store.Open(jobID)
	if errors.Is(err, state.ErrNotFound) {
		return out
	}
	if err != nil {
		t.Fatal(err)
	}
	states, err := job.ReadItemStates()
	if err != nil {
		t.Fatal(err)
	}
	for i, rec := range states {
		for _, name := range crashSteps {
			if rec.State != state.ItemRunning {
				out[fmt.Sprintf("%d %c", i+1, name)] = true
			}
		}
		for _, st := range rec.Steps {
			if st.Status != "retrying" {
				out[fmt.Sprintf("%d %c", i+1, crashSteps[st.Index])] = true
			}
		}
	}
	return out
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
