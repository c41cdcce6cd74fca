package e2e

import (
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/runnerdev/runner/internal/crashpoint"
	"github.com/runnerdev/runner/internal/runnertest"
	"github.com/runnerdev/runner/internal/state"
)

// isolationCrashItems is the number of items of isolationCrashWorkflow;
// every 5th fails until the file "fixed" exists beside the repository.
const isolationCrashItems = 12

// isolationCrashWorkflow runs 12 items, 4 at a time, each in a worktree of
// its own (commit_required makes isolation the default): it logs its run
// to runs.log in dir, sleeps 0-40 ms at random and commits a file named
// after the item; the multiples of 5 then fail until dir/fixed exists.
func isolationCrashWorkflow(dir string) string {
	return fmt.Sprintf(`name: crashiso
mode: mapreduce
map:
  input: seq 1 %d
  max_parallel: 4
  agent_template:
    - shell: |
        echo "${item}" >> '%[2]s/runs.log'
        sleep 0.0$(( $(od -An -N1 -tu1 /dev/urandom) %% 5 ))
        echo "${item}" > item-${item}.txt && git add item-${item}.txt && git commit -qm "item ${item}"
        [ $(( ${item} %% 5 )) -ne 0 ] || [ -e '%[2]s/fixed' ]
      commit_required: true
`, isolationCrashItems, dir)
}

// TestCrashResumeIsolation kills -9 a MapReduce job whose items commit in
// worktrees of their own (map.isolation: worktree) at random moments, one
// to three times per round, resuming it after each kill; then, the
// failing items fixed, kills `dlq retry` up to twice before a last retry.
// After every kill and at the end it checks SPEC §9.2's invariant: every
// item recorded as succeeded has its commit on the job branch exactly
// once, merged once; no item is merged twice; no item is lost (auditJob);
// and once the job or the retry ended, no worktree of the job is left and
// only the items in the DLQ keep a branch. RUNNER_CHAOS_ROUNDS sets the
// number of rounds (default 20; none with -short).
func TestCrashResumeIsolation(t *testing.T) {
	gitIdentity(t)
	rounds, rng := chaos(t, 20, 0)
	var kills, reruns int
	for r := range rounds {
		t.Run(fmt.Sprintf("round%d", r), func(t *testing.T) {
			k, n := isolationCrashRound(t, rng)
			kills, reruns = kills+k, reruns+n
		})
	}
	t.Logf("%d round(s): %d kill(s) -9, %d item run(s) repeated", rounds, kills, reruns)
}

// gitIdentity skips a test without git, and gives the commits of the
// test's git and runner processes an author.
func gitIdentity(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("needs git")
	}
	for _, kv := range [][2]string{{"GIT_AUTHOR_NAME", "runner-test"}, {"GIT_AUTHOR_EMAIL", "test@example.com"},
		{"GIT_COMMITTER_NAME", "runner-test"}, {"GIT_COMMITTER_EMAIL", "test@example.com"}} {
		t.Setenv(kv[0], kv[1])
	}
}

// isolationCrashRound runs one round of TestCrashResumeIsolation and
// returns the kills it made and the item runs repeated after them.
func isolationCrashRound(t *testing.T, rng *rand.Rand) (kills, reruns int) {
	dir, repo, git := isolationCrashRepo(t)
	store := state.Store{Dir: filepath.Join(repo, ".runner")}
	runsLog := filepath.Join(dir, "runs.log")
	audit := func(final bool) {
		t.Helper()
		auditJob(t, store, "j", isolationCrashItems, final)
		auditJobBranch(t, git, store, final)
	}
	// kill starts runner with args and kills it -9 once runs.log has grown
	// by a random number of lines (up to most), or a moment later.
	kill := func(most int, args ...string) {
		t.Helper()
		run := exec.Command("runner", args...)
		run.Dir = repo
		before := len(readLines(t, runsLog))
		if err := run.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan struct{})
		go func() { run.Wait(); close(exited) }()
		waitForLines(runsLog, before+1+rng.IntN(most), exited)
		// A random moment in the item's commit or merge that follows.
		time.Sleep(time.Duration(rng.IntN(30)) * time.Millisecond)
		run.Process.Signal(syscall.SIGKILL)
		<-exited
		kills++
		audit(false)
	}

	for range 1 + rng.IntN(3) {
		kill(isolationCrashItems, continueJob(store)...)
	}
	waitOrphansGone(t, dir)
	finishJob(t, repo, store)
	audit(true)

	if err := os.WriteFile(filepath.Join(dir, "fixed"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	failing := isolationCrashItems / 5
	for range rng.IntN(3) {
		kill(failing, "dlq", "retry", "j")
	}
	waitOrphansGone(t, dir)
	if code, out := runnerIn(t, repo, "dlq", "retry", "j"); code != 0 {
		t.Fatalf("final retry: exit %d\n%s", code, out)
	}
	audit(true)
	if counts := auditJob(t, store, "j", isolationCrashItems, true); counts[state.ItemSucceeded] != isolationCrashItems {
		t.Errorf("after the final retry: %v, want all %d succeeded", counts, isolationCrashItems)
	}
	runs := readLines(t, runsLog)
	distinct := map[string]bool{}
	for _, id := range runs {
		distinct[id] = true
	}
	// Each failing item runs at least twice: in the job, and once fixed.
	reruns = len(runs) - len(distinct) - failing
	t.Logf("%d kill(s), %d item run(s) repeated", kills, reruns)
	return kills, reruns
}

// isolationCrashRepo makes the repository of a round in a new directory
// dir: repo, with isolationCrashWorkflow as crash.yml committed on main;
// git runs git in it.
func isolationCrashRepo(t *testing.T) (dir, repo string, git func(...string) string) {
	dir = t.TempDir()
	repo = filepath.Join(dir, "repo")
	// A git command that runner started may outlive a kill -9 of runner
	// for a moment, writing the repository's worktree files while the
	// audit reads them ("failed to read .git/worktrees/N/commondir"): a
	// failing command is tried again for up to a second before it counts.
	git = func(args ...string) string {
		t.Helper()
		var out []byte
		var err error
		for range 6 {
			out, err = exec.Command("git", append([]string{"-C", repo}, args...)...).CombinedOutput()
			if err == nil {
				return string(out)
			}
			time.Sleep(200 * time.Millisecond)
		}
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
		return ""
	}
	if err := os.MkdirAll(repo, 0o700); err != nil {
		t.Fatal(err)
	}
	git("init", "-q", "-b", "main")
	if err := os.WriteFile(filepath.Join(repo, "crash.yml"), []byte(isolationCrashWorkflow(dir)), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(repo, ".gitignore"), []byte(".runner/\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	git("add", "-A")
	git("commit", "-qm", "base")
	return dir, repo, git
}

// auditJobBranch checks job j's branch against its item log: an item
// recorded as succeeded has its commit ("item N") and its merge on the
// branch exactly once, any other item neither more than once, and one in
// the DLQ no merge. With final (the job or a retry ended), no worktree of
// the job is left and only the items in the DLQ keep a branch.
func auditJobBranch(t *testing.T, git func(...string) string, store state.Store, final bool) {
	t.Helper()
	job, err := store.Open("j")
	if err != nil {
		return // killed before the job was created: the audit of the job says more
	}
	states, err := job.ReadItemStates()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(git("branch", "--list", "runner/j"), "runner/j") {
		if len(states) > 0 {
			t.Fatalf("items were recorded, and the job branch runner/j does not exist")
		}
		return
	}
	count := func(args ...string) map[string]int {
		n := map[string]int{}
		for _, line := range strings.Split(strings.TrimSpace(git(args...)), "\n") {
			n[line]++
		}
		return n
	}
	merges := count("log", "--merges", "--first-parent", "--format=%s", "runner/j")
	commits := count("log", "--no-merges", "--format=%s", "runner/j")
	for i := range isolationCrashItems {
		id := strconv.Itoa(i + 1)
		m, c := merges["Merge "+id+" (runner job j)"], commits["item "+id]
		switch st := states[i].State; {
		case m > 1 || c > 1:
			t.Errorf("item %s (%s) is on the job branch %d times, merged %d times", id, st, c, m)
		case st == state.ItemSucceeded && (m != 1 || c != 1):
			t.Errorf("item %s succeeded, and its commit is on the job branch %d times, merged %d times", id, c, m)
		case st == state.ItemDLQ && m != 0:
			t.Errorf("item %s is in the DLQ, and was merged %d times", id, m)
		}
	}
	if !final {
		return
	}
	if trees := strings.Count(git("worktree", "list", "--porcelain"), "worktree "); trees != 1 {
		t.Errorf("%d worktrees once the job ended, want the repository's alone\n%s", trees, git("worktree", "list"))
	}
	queued := queuedItems(t, job)
	for _, b := range strings.Fields(git("branch", "--list", "--format=%(refname:short)", "runner-items/j/*")) {
		if !queued[strings.TrimPrefix(b, "runner-items/j/")] {
			// What moved the branch last, and what git may have refused
			// its deletion for: the state to read when this fails.
			t.Errorf("branch %s is left, and its item is not in the DLQ; its reflog:\n%s\nmerged into runner/j: %q\nlock files: %v",
				b, git("reflog", "show", "--date=iso", b), git("branch", "--merged", "runner/j", "--list", b), gitLocks(git("rev-parse", "--absolute-git-dir")))
		}
	}
	for id := range queued {
		if !strings.Contains(git("branch", "--list", "runner-items/j/"+id), id) {
			t.Errorf("item %s is in the DLQ, and its branch is gone", id)
		}
	}
}

// TestCrashPoints kills runner -9 at each point between its git and state
// writes (package crashpoint: a runner built here with the tag
// runner_crashpoints, never the shipped one), first in the run of
// TestCrashResumeIsolation's job and then in a dlq retry of it once its
// failing items are fixed. After each kill, after the resume that ends the
// job and after the last retry it audits the job as that test does (each
// item exactly one of succeeded, in the DLQ, skipped or pending; each
// succeeded item's commit and merge on the job branch exactly once; no
// worktree or item branch left once the job or a retry ended, but a DLQ
// item's kept branch), and at the end every item has succeeded. Every point
// must be reached, in the run or the retry.
func TestCrashPoints(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: a runner built for the test and a job per crash point; TestCrashResume's round covers kills in -short")
	}
	gitIdentity(t)
	bin := crashPointRunner(t)
	reached := map[string]bool{}
	for _, point := range crashpoint.All {
		t.Run(point, func(t *testing.T) {
			if crashPointRound(t, bin, point) {
				reached[point] = true
			}
		})
	}
	for _, point := range crashpoint.All {
		if !reached[point] && !t.Failed() {
			t.Errorf("crash point %s was never reached", point)
		}
	}
}

// crashPointBuild is crashPointRunner's binary, built once per test process.
var crashPointBuild struct {
	once sync.Once
	bin  string
	err  error
}

// crashPointRunner is runner built with the tag runner_crashpoints (never
// the shipped one), next to the runner the tests run: built once.
func crashPointRunner(t *testing.T) string {
	t.Helper()
	b := &crashPointBuild
	b.once.Do(func() {
		runner, err := exec.LookPath("runner")
		if err == nil {
			b.bin = filepath.Join(filepath.Dir(runner), "runner-crashpoints")
			err = runnertest.Build(b.bin, "-tags", "runner_crashpoints")
		}
		b.err = err
	})
	if b.err != nil {
		t.Fatal(b.err)
	}
	return b.bin
}

// crashPointRound runs TestCrashPoints for one point, and reports whether
// runner was killed there.
func crashPointRound(t *testing.T, bin, point string) (reached bool) {
	dir, repo, git := isolationCrashRepo(t)
	store := state.Store{Dir: filepath.Join(repo, ".runner")}
	audit := func(final bool) {
		t.Helper()
		auditJob(t, store, "j", isolationCrashItems, final)
		auditJobBranch(t, git, store, final)
	}
	// killed runs the crash point runner with args, armed at point, and
	// reports whether it died there (else it ended of itself).
	killed := func(args ...string) bool {
		t.Helper()
		c := exec.Command(bin, args...)
		c.Dir = repo
		c.Env = append(os.Environ(), "RUNNER_CRASHPOINT="+point)
		out, err := c.CombinedOutput()
		var exit *exec.ExitError
		if !errors.As(err, &exit) {
			return false
		}
		if ws, ok := exit.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
			return false
		}
		t.Logf("runner %v: killed at %s\n%s", args, point, out)
		waitOrphansGone(t, dir)
		audit(false)
		return true
	}

	if killed("run", "--job-id", "j", "crash.yml") {
		reached = true
		finishJob(t, repo, store)
	}
	audit(true)
	if err := os.WriteFile(filepath.Join(dir, "fixed"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if killed("dlq", "retry", "j") {
		reached = true
	}
	if code, out := runnerIn(t, repo, "dlq", "retry", "j"); code != 0 {
		t.Fatalf("final retry: exit %d\n%s", code, out)
	}
	audit(true)
	if counts := auditJob(t, store, "j", isolationCrashItems, true); counts[state.ItemSucceeded] != isolationCrashItems {
		t.Errorf("after the final retry: %v, want all %d succeeded", counts, isolationCrashItems)
	}
	return reached
}

// gitLocks lists the lock files under the git directory dir that a
// killed git may have left (packed-refs.new, the temporary file of a
// branch deletion, blocks the next ones as a lock does).
func gitLocks(dir string) []string {
	var locks []string
	root := strings.TrimSpace(dir)
	filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err == nil && (strings.HasSuffix(path, ".lock") || d.Name() == "packed-refs.new") {
			locks = append(locks, path)
		}
		return nil
	})
	return locks
}
