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
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/runnerdev/runner/internal/crashpoint"
	"github.com/runnerdev/runner/internal/state"
)

// rmCrashWorkflow runs 2 items at once, each in a worktree of its own:
// each commits a file, says so by a file in dir (waiting-N) and waits
// for dir/release, so that runner, killed meanwhile, leaves the job
// with its worktree, the items' worktrees and its three branches.
func rmCrashWorkflow(dir string) string {
	return fmt.Sprintf(`name: rmcrash
mode: mapreduce
map:
  input: seq 1 2
  max_parallel: 2
  isolation: worktree
  agent_template:
    - shell: |
        echo ${item} > f-${item}.txt && git add f-${item}.txt && git commit -qm "item ${item}"
        touch '%[1]s/waiting-${item}'
        i=0
        until [ -e '%[1]s/release' ] || [ $i -ge 3000 ]; do i=$((i+1)); sleep 0.01; done
`, dir)
}

// TestJobsRmCrash kills runner jobs rm --force and jobs prune --force -9
// while they remove a job that ran in git worktrees (one killed while its
// items ran: its worktree, its items' worktrees, its branches), at each
// point of the removal (package crashpoint: the directory renamed to its
// tombstone, each worktree removed, each branch deleted) and at random
// moments. After each kill the job is either listed whole (its files
// there, every worktree and branch it had, and no tombstone) or not
// listed at all; then an rm or prune (chosen at random) leaves nothing:
// no job directory, no tombstone, no worktree or record of one, no
// branch of the job's, no lock file of git's. RUNNER_CHAOS_ROUNDS sets
// the number of rounds (default 6; none with -short; make chaos runs 50).
func TestJobsRmCrash(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: a runner built for the test and a job per round")
	}
	gitIdentity(t)
	bin := crashPointRunner(t)
	rounds, rng := chaos(t, 6, 0)
	reached := map[string]bool{}
	outcomes := map[string]int{}
	for r := range rounds {
		// The first rounds go through the points (a worktree and a
		// branch at a random hit); the rest kill at random moments, or
		// at a point half of the time.
		point := ""
		if r < len(crashpoint.Removal) || rng.IntN(2) == 0 {
			point = crashpoint.Removal[r%len(crashpoint.Removal)]
			if point != crashpoint.JobBuried {
				point += ":" + strconv.Itoa(1+rng.IntN(3))
			}
		}
		t.Run(fmt.Sprintf("round%d", r), func(t *testing.T) {
			outcome := rmCrashRound(t, rng, bin, point)
			outcomes[outcome]++
			if outcome != "not killed" && point != "" {
				reached[strings.Split(point, ":")[0]] = true
			}
		})
	}
	t.Logf("%d round(s): %v", rounds, outcomes)
	for _, point := range crashpoint.Removal {
		if !reached[point] && !t.Failed() && rounds >= len(crashpoint.Removal) {
			t.Errorf("crash point %s was never reached", point)
		}
	}
}

// rmCrashRound runs one round of TestJobsRmCrash, killing the removal at
// point ("": at a random moment), and returns what the kill left: "whole"
// (the job listed), "buried" (a tombstone), "removed" (nothing) or "not
// killed".
func rmCrashRound(t *testing.T, rng *rand.Rand, bin, point string) string {
	dir, repo, git := isolationCrashRepo(t)
	if err := os.WriteFile(filepath.Join(repo, "rm.yml"), []byte(rmCrashWorkflow(dir)), 0o600); err != nil {
		t.Fatal(err)
	}
	store := state.Store{Dir: filepath.Join(repo, ".runner")}

	// The job, killed with its items waiting in their worktrees.
	run := exec.Command("runner", "run", "--job-id", "j", "rm.yml")
	run.Dir = repo
	if err := run.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { run.Wait(); close(exited) }()
	waiting := func() bool {
		for _, f := range []string{"waiting-1", "waiting-2"} {
			if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
				return false
			}
		}
		return true
	}
	if !waitUntil(waiting, exited) {
		t.Fatal("the job's items did not start")
	}
	run.Process.Signal(syscall.SIGKILL)
	<-exited
	if err := os.WriteFile(filepath.Join(dir, "release"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	waitOrphansGone(t, dir)
	trees, branches := rmGitState(git)
	if len(trees) != 3 || len(branches) != 3 {
		t.Fatalf("the killed job left worktrees %q and branches %q; want 3 of each", trees, branches)
	}

	// The removal, killed.
	args := []string{"jobs", "rm", "--force", "j"}
	if rng.IntN(2) == 0 {
		args = []string{"jobs", "prune", "--force", "--older-than", "0s"}
	}
	rm := exec.Command(bin, args...)
	rm.Dir = repo
	if point != "" {
		rm.Env = append(os.Environ(), "RUNNER_CRASHPOINT="+point)
	}
	stderr := &bytes.Buffer{} // read once it exited
	rm.Stderr = stderr
	stdout, err := rm.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := rm.Start(); err != nil {
		t.Fatal(err)
	}
	// lines gets each line the removal prints ("removed ..."), and is
	// closed when it exits.
	lines := make(chan string, 16)
	var out []string
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
		rm.Wait()
		close(lines)
	}()
	// At a random moment: once the removal has said it removed a random
	// number of things (0 to 6: up to the last branch), a moment later;
	// with none, within a second and a half of its start.
	n, kill := rng.IntN(7), time.Duration(rng.IntN(40))*time.Millisecond
	if n == 0 {
		kill = time.Duration(rng.IntN(1500)) * time.Millisecond
	}
	var timer <-chan time.Time
	if point == "" && n == 0 {
		timer = time.After(kill)
	}
	for running := true; running; {
		select {
		case line, ok := <-lines:
			if !ok {
				running = false
				break
			}
			out = append(out, line)
			if point == "" && len(out) == n {
				timer = time.After(kill)
			}
		case <-timer:
			rm.Process.Signal(syscall.SIGKILL)
			timer = nil
		}
	}
	killed := false
	if ws, ok := rm.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL {
		killed = true
	} else if !rm.ProcessState.Success() {
		t.Fatalf("runner %v (not killed): %v\n%s\n%s", args, rm.ProcessState, strings.Join(out, "\n"), stderr)
	}

	// Whole or gone.
	outcome := rmAuditKilled(t, store, git, trees, branches)
	if !killed {
		if outcome != "removed" {
			t.Fatalf("runner %v ended, and left the job %s\n%s\n%s", args, outcome, strings.Join(out, "\n"), stderr)
		}
		outcome = "not killed"
	}
	t.Logf("runner %v killed at %q after %d line(s): the job %s\n%s", args, point, len(out), outcome, strings.Join(out, "\n"))

	// The next removal leaves nothing.
	next := []string{"jobs", "prune", "--older-than", "0s"}
	switch {
	case outcome == "whole" || rng.IntN(2) == 0 && outcome == "buried":
		next = []string{"jobs", "rm", "--force", "j"}
	case outcome == "whole":
		next = []string{"jobs", "prune", "--force", "--older-than", "0s"}
	}
	if code, out := runnerIn(t, repo, next...); code != 0 {
		t.Fatalf("runner %v after the kill: exit %d\n%s", next, code, out)
	}
	rmAuditGone(t, store, git)
	return outcome
}

// rmGitState returns the worktrees of the repository but its own and the
// branches but main.
func rmGitState(git func(...string) string) (trees, branches []string) {
	for _, line := range strings.Split(git("worktree", "list", "--porcelain"), "\n") {
		if p, ok := strings.CutPrefix(line, "worktree "); ok {
			trees = append(trees, p)
		}
	}
	if len(trees) > 0 {
		trees = trees[1:] // the repository's own
	}
	branches = strings.Fields(git("branch", "--list", "--format=%(refname:short)"))
	return trees, slices.DeleteFunc(branches, func(b string) bool { return b == "main" })
}

// rmAuditKilled checks what a killed removal left of job j: listed whole
// (its files, the worktrees trees and branches it had, no tombstone), or
// not listed at all; and says which ("whole", "buried": a tombstone is
// left, "removed").
func rmAuditKilled(t *testing.T, store state.Store, git func(...string) string, trees, branches []string) string {
	t.Helper()
	c := exec.Command("runner", "jobs", "--json")
	c.Dir = filepath.Dir(store.Dir)
	data, err := c.Output()
	if err != nil {
		t.Fatalf("runner jobs --json: %v", err)
	}
	var listed []state.Meta
	if err := json.Unmarshal(data, &listed); err != nil {
		t.Fatalf("runner jobs --json: %v\n%s", err, data)
	}
	tomb := store.Layout("j").Tombstone
	_, tombErr := os.Stat(tomb)
	if len(listed) == 0 {
		if _, err := store.Open("j"); !errors.Is(err, state.ErrNotFound) {
			t.Errorf("job j is not listed, and opens: %v", err)
		}
		if tombErr == nil {
			return "buried"
		}
		return "removed"
	}
	if len(listed) != 1 || listed[0].ID != "j" {
		t.Fatalf("runner jobs lists %+v, want j alone", listed)
	}
	if tombErr == nil {
		t.Errorf("job j is listed, and has a tombstone too")
	}
	j, err := store.Open("j")
	if err != nil {
		t.Fatalf("job j is listed, and does not open: %v", err)
	}
	layout := j.Layout()
	for _, f := range []string{j.WorkflowCopy(), layout.Events, layout.Items, layout.ItemStates} {
		if _, err := os.Stat(f); err != nil {
			t.Errorf("job j is listed, and lacks %s: %v", filepath.Base(f), err)
		}
	}
	nowTrees, nowBranches := rmGitState(git)
	if !slices.Equal(nowTrees, trees) || !slices.Equal(nowBranches, branches) {
		t.Errorf("job j is listed, with worktrees %q and branches %q; it had %q and %q", nowTrees, nowBranches, trees, branches)
	}
	for _, tree := range trees {
		if _, err := os.Stat(filepath.Join(tree, ".git")); err != nil {
			t.Errorf("job j is listed, and its worktree %s is not whole: %v", tree, err)
		}
	}
	return "whole"
}

// rmAuditGone checks that nothing is left of job j: no directory or
// tombstone in the state dir, no worktree (nor git's record of one), no
// branch but main, no lock file of git's.
func rmAuditGone(t *testing.T, store state.Store, git func(...string) string) {
	t.Helper()
	if entries, err := os.ReadDir(filepath.Dir(store.Layout("j").Dir)); err != nil || len(entries) != 0 {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Errorf("the jobs directory holds %q (%v); want nothing", names, err)
	}
	trees, branches := rmGitState(git)
	if len(trees) != 0 || len(branches) != 0 {
		t.Errorf("worktrees %q and branches %q are left", trees, branches)
	}
	gitDir := strings.TrimSpace(git("rev-parse", "--absolute-git-dir"))
	if records, err := os.ReadDir(filepath.Join(gitDir, "worktrees")); err == nil && len(records) > 0 {
		t.Errorf("git's records of worktrees are left: %v", records)
	}
	locks := slices.DeleteFunc(gitLocks(gitDir), func(path string) bool {
		return strings.HasPrefix(filepath.Base(path), "runner-") // runner's flocks, not git's
	})
	if len(locks) > 0 {
		t.Errorf("git's lock files are left: %q", locks)
	}
}
