package e2e

import (
	"encoding/json"
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

	"github.com/runnerdev/runner/cmd"
	"github.com/runnerdev/runner/internal/state"
	"github.com/runnerdev/runner/internal/testkit"
)

// mergeRepo is a repository of the merge tests: main with one commit, the
// state dir ignored, and hooks (see mergeHook) that log to its directory.
type mergeRepo struct {
	t    *testing.T
	dir  string // beside the repository: hooks.log, hooks' controls
	repo string
}

// mergeHook is each hook of a merge test's repository: it logs "<hook>
// <its pid> <git's pid>" to hooks.log, blocks for 30 s if the file block
// is there (taking it: one hook blocks), then sleeps for the seconds in
// the file <hook>.sleep if there is one.
const mergeHook = `#!/bin/sh
name=$(basename "$0")
echo "$name $$ $PPID" >> '%[1]s/hooks.log'
if [ -e '%[1]s/block' ] && rm '%[1]s/block' 2>/dev/null; then
	i=0; while [ $i -lt 600 ]; do sleep 0.05; i=$((i+1)); done
fi
if [ -e "%[1]s/$name.sleep" ]; then sleep "$(cat "%[1]s/$name.sleep")"; fi
exit 0
`

// mergeWorkflow is a standard workflow whose job branch merges into the
// branch it started on (merge_back: true): its one step commits
// job-<id>.txt (again after a crash, if the commit is not there), after
// waiting, bounded, until every job named in the file barrier beside
// the repository has reached it.
const mergeWorkflow = `merge_back: true
commands:
  - shell: |
      touch '%[1]s/ready-'"$RUNNER_JOB_ID"
      for other in $(cat '%[1]s/barrier' 2>/dev/null); do
        i=0; while [ $i -lt 200 ] && [ ! -e '%[1]s/ready-'"$other" ]; do sleep 0.02; i=$((i+1)); done
      done
      echo "$RUNNER_JOB_ID" > "job-$RUNNER_JOB_ID.txt" && git add "job-$RUNNER_JOB_ID.txt"
      git diff --cached --quiet || git commit -qm "work of $RUNNER_JOB_ID"
`

// newMergeRepo makes a mergeRepo with the hooks named.
func newMergeRepo(t *testing.T, hooks ...string) *mergeRepo {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: runner killed in git's merges, through hooks")
	}
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("needs git")
	}
	needProc(t)
	dir := t.TempDir()
	r := &mergeRepo{t: t, dir: dir, repo: filepath.Join(dir, "repo")}
	if err := os.MkdirAll(r.repo, 0o700); err != nil {
		t.Fatal(err)
	}
	r.git("init", "-q", "-b", "main")
	r.write(filepath.Join(r.repo, ".gitignore"), ".runner/\nmerge.yml\n")
	r.write(filepath.Join(r.repo, "merge.yml"), fmt.Sprintf(mergeWorkflow, dir))
	r.git("add", ".gitignore")
	r.git("commit", "-qm", "base")
	for _, h := range hooks {
		path := filepath.Join(r.repo, ".git", "hooks", h)
		r.write(path, fmt.Sprintf(mergeHook, dir))
		if err := os.Chmod(path, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	return r
}

// gitEnv gives the tests' git commands, and runner's, an identity.
func gitEnv(t *testing.T) {
	for _, kv := range [][2]string{{"GIT_AUTHOR_NAME", "runner-test"}, {"GIT_AUTHOR_EMAIL", "test@example.com"},
		{"GIT_COMMITTER_NAME", "runner-test"}, {"GIT_COMMITTER_EMAIL", "test@example.com"}} {
		t.Setenv(kv[0], kv[1])
	}
}

func (r *mergeRepo) write(path, content string) {
	r.t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		r.t.Fatal(err)
	}
}

// git runs git in the repository and returns its output, trimmed.
func (r *mergeRepo) git(args ...string) string {
	r.t.Helper()
	out, err := exec.Command("git", append([]string{"-C", r.repo}, args...)...).CombinedOutput()
	if err != nil {
		r.t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// start starts runner with args in the repository; exited is closed when
// it has ended.
func (r *mergeRepo) start(args ...string) (run *exec.Cmd, exited chan struct{}) {
	r.t.Helper()
	run = exec.Command("runner", args...)
	run.Dir = r.repo
	if err := run.Start(); err != nil {
		r.t.Fatal(err)
	}
	exited = make(chan struct{})
	go func() { run.Wait(); close(exited) }()
	return run, exited
}

// hookRun is one run of a hook, from hooks.log.
type hookRun struct {
	name     string
	pid, git int // the hook's pid and its parent's, git's
}

// hooks returns the hook runs logged so far.
func (r *mergeRepo) hooks() []hookRun {
	var runs []hookRun
	for _, line := range readLines(r.t, filepath.Join(r.dir, "hooks.log")) {
		var h hookRun
		if _, err := fmt.Sscanf(line, "%s %d %d", &h.name, &h.pid, &h.git); err == nil {
			runs = append(runs, h)
		}
	}
	return runs
}

// waitHook waits (10 s at most) until hook ("" for any) has run n times
// in all, or the runner process has exited, and returns the last such
// run.
func (r *mergeRepo) waitHook(hook string, n int, exited <-chan struct{}) (hookRun, bool) {
	for deadline := time.Now().Add(testkit.Scale(10 * time.Second)); time.Now().Before(deadline); {
		var seen []hookRun
		for _, h := range r.hooks() {
			if h.name == hook || hook == "" {
				seen = append(seen, h)
			}
		}
		if len(seen) >= n {
			return seen[n-1], true
		}
		select {
		case <-exited:
			return hookRun{}, false
		case <-time.After(5 * time.Millisecond):
		}
	}
	return hookRun{}, false
}

// killInHook waits until hook has run n times in all (waitHook), then
// kills the runner process run -9 and waits until its git (which dies
// with it) is gone; the hook lives on until the test ends. what names the
// process in failures.
func (r *mergeRepo) killInHook(run *exec.Cmd, exited <-chan struct{}, hook string, n int, what string) hookRun {
	r.t.Helper()
	h, ok := r.waitHook(hook, n, exited)
	run.Process.Kill()
	<-exited
	if !ok {
		r.t.Fatalf("%s ended, or 10 s passed, before the %s hook ran", what, hook)
	}
	r.killAtEnd(h.pid)
	r.waitGone(h.git, "the git merge of the killed "+what)
	return h
}

// killAtEnd kills pid (a hook a killed runner left) when the test ends.
func (r *mergeRepo) killAtEnd(pid int) {
	if pid > 0 {
		r.t.Cleanup(func() { syscall.Kill(pid, syscall.SIGKILL) })
	}
}

// running reports whether pid runs (a zombie does not).
func running(pid int) bool {
	stat := procStat(pid)
	return len(stat) > 0 && stat[0] != "Z"
}

// stopped reports whether pid is stopped by a signal.
func stopped(pid int) bool {
	stat := procStat(pid)
	return len(stat) > 0 && stat[0] == "T"
}

// waitGone fails the test unless pid is gone (testkit.Poll); it kills
// it then, so that nothing outlives the test.
func (r *mergeRepo) waitGone(pid int, what string) {
	r.t.Helper()
	if !testkit.Poll(func() bool { return !running(pid) }) {
		syscall.Kill(pid, syscall.SIGKILL)
		r.t.Errorf("%s (pid %d) still runs", what, pid)
	}
}

// checkMerged checks the end of the jobs named: each completed, its
// branch merged into main by exactly one merge commit; the checkout is
// clean, in the middle of no merge, and has no worktree but its own.
func (r *mergeRepo) checkMerged(jobs ...string) {
	r.t.Helper()
	merges := map[string]int{}
	for _, s := range strings.Split(r.git("log", "--merges", "--first-parent", "--format=%s", "main"), "\n") {
		merges[s]++
	}
	for _, id := range jobs {
		if n := merges["Merge runner/"+id+" (runner job "+id+")"]; n != 1 {
			r.t.Errorf("job %s is merged into main %d times, want once\n%s", id, n, r.git("log", "--graph", "--oneline", "main"))
		}
		if _, err := os.Stat(filepath.Join(r.repo, "job-"+id+".txt")); err != nil {
			r.t.Errorf("job %s's file is not in the checkout: %v", id, err)
		}
		if st := r.meta(id).Status; st != state.Completed {
			r.t.Errorf("job %s is %s, want completed", id, st)
		}
	}
	if st := r.git("status", "--porcelain", "--untracked-files=no"); st != "" {
		r.t.Errorf("the checkout has changes:\n%s", st)
	}
	if _, err := os.Stat(filepath.Join(r.repo, ".git", "MERGE_HEAD")); err == nil {
		r.t.Error("the checkout is in the middle of a merge")
	}
	if trees := strings.Count(r.git("worktree", "list", "--porcelain"), "worktree "); trees != 1 {
		r.t.Errorf("%d worktrees, want the checkout's alone:\n%s", trees, r.git("worktree", "list"))
	}
}

// meta reads job id's metadata as job.json has it.
func (r *mergeRepo) meta(id string) state.Meta {
	r.t.Helper()
	var m state.Meta
	data, err := os.ReadFile(state.Store{Dir: filepath.Join(r.repo, ".runner")}.Layout(id).Meta)
	if err == nil {
		err = json.Unmarshal(data, &m)
	}
	if err != nil {
		r.t.Fatalf("job %s: %v", id, err)
	}
	return m
}

// A runner killed -9 while its final merge waits in a slow
// pre-merge-commit hook takes its git with it (the merge does not go on
// without it); the resume ends the hook it left, undoes the half-made
// merge and makes it, once. Killed in a post-merge hook, after git made
// the merge commit, the resume finds the branch merged.
func TestMergeKilledInHook(t *testing.T) {
	gitEnv(t)
	for _, hook := range []string{"pre-merge-commit", "post-merge"} {
		t.Run(hook, func(t *testing.T) {
			r := newMergeRepo(t, hook)
			r.write(filepath.Join(r.dir, "block"), "")
			run, exited := r.start("run", "--merge", "--job-id", "a", "merge.yml")
			h := r.killInHook(run, exited, hook, 1, "runner")
			if code, out := runnerIn(t, r.repo, "resume", "--merge", "a"); code != 0 {
				t.Fatalf("resume --merge: exit %d\n%s", code, out)
			}
			if running(h.pid) {
				t.Errorf("the %s hook the killed runner's git started (pid %d) still runs after the resume", hook, h.pid)
			}
			r.checkMerged("a")
		})
	}
}

// refUpdateHook is a reference-transaction hook that logs as mergeHook
// does and, if the file block is there (taking it: one update blocks),
// blocks (30 s at most) while the update of main is prepared: git holds
// HEAD.lock then.
const refUpdateHook = `#!/bin/sh
refs=$(cat)
case "$1 $refs" in
"prepared "*refs/heads/main*)
	echo "reference-transaction $$ $PPID" >> '%[1]s/hooks.log'
	if [ -e '%[1]s/block' ] && rm '%[1]s/block' 2>/dev/null; then
		i=0; while [ $i -lt 600 ]; do sleep 0.05; i=$((i+1)); done
	fi;;
esac
exit 0
`

// A git killed in its merge's ref update without its signal handler
// running (SIGKILL, here while its runner is stopped and cannot react)
// leaves HEAD.lock and MERGE_HEAD in the checkout: resume --merge removes
// the lock file, undoes the half-made merge and makes it, once.
func TestMergeGitKilledInRefUpdate(t *testing.T) {
	gitEnv(t)
	r := newMergeRepo(t)
	hook := filepath.Join(r.repo, ".git", "hooks", "reference-transaction")
	r.write(hook, fmt.Sprintf(refUpdateHook, r.dir))
	if err := os.Chmod(hook, 0o700); err != nil {
		t.Fatal(err)
	}
	r.write(filepath.Join(r.dir, "block"), "")
	run, exited := r.start("run", "--merge", "--job-id", "a", "merge.yml")
	h, ok := r.waitHook("reference-transaction", 1, exited)
	if !ok {
		run.Process.Kill()
		<-exited
		t.Fatal("runner ended, or 10 s passed, before the ref update's hook ran")
	}
	r.killAtEnd(h.pid)
	// The runner stopped cannot react to its git's death, nor send it
	// the SIGTERM of its own.
	syscall.Kill(run.Process.Pid, syscall.SIGSTOP)
	testkit.Poll(func() bool { return stopped(run.Process.Pid) })
	syscall.Kill(h.git, syscall.SIGKILL)
	r.waitGone(h.git, "the git merge of the stopped runner")
	run.Process.Kill()
	<-exited
	if _, err := os.Stat(filepath.Join(r.repo, ".git", "HEAD.lock")); err != nil {
		t.Fatalf("the killed git left no HEAD.lock: %v", err)
	}
	if code, out := runnerIn(t, r.repo, "resume", "--merge", "a"); code != 0 {
		t.Fatalf("resume --merge: exit %d\n%s", code, out)
	}
	r.checkMerged("a")
	if _, err := os.Stat(filepath.Join(r.repo, ".git", "HEAD.lock")); err == nil {
		t.Error("HEAD.lock is still there")
	}
}

// Two jobs that end at once in one checkout merge into it in turn: both
// merge, each checking the checkout while the other's slow
// pre-merge-commit hook does not hold a merge half made in it.
func TestMergesTakeTurns(t *testing.T) {
	gitEnv(t)
	r := newMergeRepo(t, "pre-merge-commit")
	r.write(filepath.Join(r.dir, "barrier"), "a b")
	r.write(filepath.Join(r.dir, "pre-merge-commit.sleep"), "0.5")
	runs := map[string]chan struct{}{}
	cmds := map[string]*exec.Cmd{}
	for _, id := range []string{"a", "b"} {
		cmds[id], runs[id] = r.start("run", "--merge", "--job-id", id, "merge.yml")
	}
	for id, exited := range runs {
		select {
		case <-exited:
		case <-time.After(testkit.Scale(2 * time.Minute)):
			cmds[id].Process.Kill()
			t.Fatalf("job %s did not end within 2 minutes", id)
		}
		if code := cmds[id].ProcessState.ExitCode(); code != 0 {
			t.Errorf("job %s: exit %d (%s)", id, code, r.meta(id).Error)
		}
	}
	r.checkMerged("a", "b")
}

// A job killed before its job worktree is made (here in git worktree
// add's post-checkout hook) has its target branch recorded already:
// resume --merge merges into it.
func TestMergeTargetRecordedFirst(t *testing.T) {
	gitEnv(t)
	r := newMergeRepo(t, "post-checkout")
	r.write(filepath.Join(r.dir, "block"), "")
	run, exited := r.start("run", "--merge", "--job-id", "a", "merge.yml")
	h, ok := r.waitHook("post-checkout", 1, exited)
	run.Process.Kill()
	<-exited
	if !ok {
		t.Fatal("runner ended, or 10 s passed, before git worktree add's hook ran")
	}
	r.killAtEnd(h.pid)
	if got := r.meta("a").TargetBranch; got != "main" {
		t.Errorf("job.json's target_branch is %q, want main", got)
	}
	if code, out := runnerIn(t, r.repo, "resume", "--merge", "a"); code != 0 {
		t.Fatalf("resume --merge: exit %d\n%s", code, out)
	}
	r.checkMerged("a")
}

// TestMergeCrash kills -9 two jobs that merge into one checkout at once,
// through slow pre-merge-commit and post-merge hooks (random sleeps), at
// random moments of their merges, resuming each (--merge) after each
// kill, one to three kills a round. After every kill no git process of
// the killed runner is left; at the end each job completed with its
// branch merged once, the checkout is clean, and no hook the killed
// runners' gits started still runs. RUNNER_CHAOS_ROUNDS sets the number
// of rounds (default 1; none with -short; make chaos runs 50).
func TestMergeCrash(t *testing.T) {
	gitEnv(t)
	rounds, rng := chaos(t, 1, 0)
	kills, inMerge := 0, 0
	for round := range rounds {
		t.Run(fmt.Sprintf("round%d", round), func(t *testing.T) {
			k, m := mergeCrashRound(t, rng)
			kills, inMerge = kills+k, inMerge+m
		})
	}
	t.Logf("%d round(s), %d kill(s) -9, %d of them in a merge's hook", rounds, kills, inMerge)
	if rounds > 0 && inMerge == 0 {
		t.Error("no kill came during a merge")
	}
}

// mergeCrashRound is one round of TestMergeCrash; it returns its kills,
// and how many of them came while a git of the runner ran a hook.
func mergeCrashRound(t *testing.T, rng *rand.Rand) (kills, inMerge int) {
	r := newMergeRepo(t, "pre-merge-commit", "post-merge")
	r.write(filepath.Join(r.dir, "barrier"), "a b")
	r.write(filepath.Join(r.dir, "pre-merge-commit.sleep"), fmt.Sprintf("0.%02d", 5+rng.IntN(25)))
	r.write(filepath.Join(r.dir, "post-merge.sleep"), fmt.Sprintf("0.%02d", rng.IntN(20)))
	type job struct {
		run    *exec.Cmd
		exited chan struct{}
	}
	jobs := map[string]*job{}
	start := func(id string) {
		args := []string{"resume", "--merge", id}
		if _, err := os.Stat(state.Store{Dir: filepath.Join(r.repo, ".runner")}.Layout(id).Meta); err != nil {
			args = []string{"run", "--merge", "--job-id", id, "merge.yml"}
		}
		j := &job{}
		j.run, j.exited = r.start(args...)
		jobs[id] = j
	}
	start("a")
	start("b")
	for range 1 + rng.IntN(3) {
		// The next hook that runs, in either job's merge, and a random
		// moment in it.
		both := make(chan struct{})
		go func(a, b <-chan struct{}) { <-a; <-b; close(both) }(jobs["a"].exited, jobs["b"].exited)
		h, ok := r.waitHook("", len(r.hooks())+1, both)
		if !ok {
			break // both jobs ended
		}
		time.Sleep(time.Duration(rng.IntN(100)) * time.Millisecond)
		id, j := "", (*job)(nil)
		for jid, jj := range jobs {
			if stat := procStat(h.git); len(stat) > 1 && stat[1] == strconv.Itoa(jj.run.Process.Pid) {
				id, j = jid, jj
			}
		}
		if j == nil {
			continue // its git has ended
		}
		gits := r.gitsOf(j.run.Process.Pid)
		select {
		case <-j.exited:
			continue // it ended first
		default:
		}
		j.run.Process.Kill()
		<-j.exited
		kills++
		if len(gits) > 0 {
			inMerge++
		}
		for _, pid := range gits {
			r.waitGone(pid, "a git of the killed runner")
		}
		start(id)
	}
	for id, j := range jobs {
		select {
		case <-j.exited:
		case <-time.After(testkit.Scale(2 * time.Minute)):
			j.run.Process.Kill()
			t.Fatalf("job %s did not end within 2 minutes", id)
		}
		// Killed as it ended, a job is completed: resume says so (exit 2).
		if code := j.run.ProcessState.ExitCode(); code != 0 && (code != 2 || r.meta(id).Status != state.Completed) {
			t.Errorf("job %s: exit %d (%s)", id, code, r.meta(id).Error)
		}
	}
	r.checkMerged("a", "b")
	for _, h := range r.hooks() {
		if running(h.pid) {
			t.Errorf("the %s hook %d still runs once both jobs ended", h.name, h.pid)
			syscall.Kill(h.pid, syscall.SIGKILL)
		}
	}
	return kills, inMerge
}

// gitsOf returns the gits that runner process pid runs now, among those
// that ran a hook.
func (r *mergeRepo) gitsOf(pid int) []int {
	var gits []int
	for _, h := range r.hooks() {
		if stat := procStat(h.git); len(stat) > 1 && stat[0] != "Z" && stat[1] == strconv.Itoa(pid) {
			gits = append(gits, h.git)
		}
	}
	return gits
}

// itemsWorkflow runs 4 items in worktrees of their own, each committing a
// file; their branches merge into the job branch as they succeed. Item 3
// fails until the file fixed is in the directory given.
const itemsWorkflow = `mode: mapreduce
map:
  input: seq 1 4
  max_parallel: 2
  agent_template:
    - shell: echo "${item}" > "item-${item}.txt" && git add . && git commit -qm "item ${item}"
      commit_required: true
    - shell: "[ ${item} -ne 3 ] || [ -e '%s/fixed' ]"
`

// A runner killed -9 while an item's merge into the job branch waits in a
// slow pre-merge-commit hook takes its git with it; the resume ends the
// hook, undoes the half-made merge in the job worktree and ends the job,
// its failing item in the DLQ. The same for a dlq retry killed in its
// merge, and the next retry: in the end every item is merged once.
func TestItemMergeKilledInHook(t *testing.T) {
	gitEnv(t)
	r := newMergeRepo(t, "pre-merge-commit")
	r.write(filepath.Join(r.repo, "items.yml"), fmt.Sprintf(itemsWorkflow, r.dir))
	r.write(filepath.Join(r.dir, "block"), "")
	run, exited := r.start("run", "--job-id", "j", "items.yml")
	h := r.killInHook(run, exited, "pre-merge-commit", 1, "runner")
	if code, out := runnerIn(t, r.repo, "resume", "j"); code != cmd.ExitItemsInDLQ {
		t.Fatalf("resume: exit %d, want %d (item 3 in the DLQ)\n%s", code, cmd.ExitItemsInDLQ, out)
	}
	if running(h.pid) {
		t.Errorf("the hook the killed runner's git started (pid %d) still runs after the resume", h.pid)
	}

	// The same in the merge of a dlq retry.
	r.write(filepath.Join(r.dir, "fixed"), "")
	r.write(filepath.Join(r.dir, "block"), "")
	n := len(r.hooks())
	retry, exited := r.start("dlq", "retry", "j")
	h = r.killInHook(retry, exited, "pre-merge-commit", n+1, "dlq retry")
	if code, out := runnerIn(t, r.repo, "dlq", "retry", "j"); code != 0 {
		t.Fatalf("dlq retry: exit %d\n%s", code, out)
	}
	if running(h.pid) {
		t.Errorf("the hook the killed dlq retry's git started (pid %d) still runs after the next retry", h.pid)
	}
	merges := r.git("log", "--merges", "--first-parent", "--format=%s", "runner/j")
	for i := 1; i <= 4; i++ {
		if n := strings.Count(merges+"\n", fmt.Sprintf("Merge %d (runner job j)\n", i)); n != 1 {
			t.Errorf("item %d is merged into the job branch %d times\n%s", i, n, merges)
		}
	}
	if trees := strings.Count(r.git("worktree", "list", "--porcelain"), "worktree "); trees != 1 {
		t.Errorf("%d worktrees, want the checkout's alone", trees)
	}
}
