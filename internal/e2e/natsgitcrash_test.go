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

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/runnerdev/runner/internal/crashpoint"
	"github.com/runnerdev/runner/internal/natsconn"
	"github.com/runnerdev/runner/internal/natstest"
	"github.com/runnerdev/runner/internal/state"
	"github.com/runnerdev/runner/internal/testkit"
)

const (
	gitCrashItems  = 6
	gitCrashWindow = 4 // max_parallel
	gitCrashSlots  = 2 // --concurrency of each worker
)

// gitCrashWorkflow's items commit a file each in their worktrees, each
// run logged to runs; the first run of the item GIT_CRASH_BIG_ITEM names
// commits big-<item>.bin too, 400 KiB of random data: its bundle is
// uploaded in more than one chunk.
func gitCrashWorkflow(runs string) string {
	return `mode: mapreduce
map:
  input: seq 1 ` + strconv.Itoa(gitCrashItems) + `
  max_parallel: ` + strconv.Itoa(gitCrashWindow) + `
  isolation: worktree
  agent_template:
    - shell: |
        echo "${item} $RUNNER_WORKER" >> ` + runs + `
        echo ${item} > item-${item}.txt
        [ "${item}" != "$GIT_CRASH_BIG_ITEM" ] || ! mkdir ` + runs + `.big 2>/dev/null || head -c 409600 /dev/urandom > big-${item}.bin
        git add -A && git commit -qm "item ${item}"
        sleep 0.2
`
}

// killingGit is a git in front of the real one (at real) that kills a
// process with kill -9 once, just after the Nth git command of a kind has
// done its work, as GIT_KILL_AT says ("commit:N", "bundle:N" for bundle
// create, "fetch:N", "merge:N"; unset: none): the item's worker for a
// commit (its pid in marks/<RUNNER_WORKER>.pid), else the runner that ran
// git. Hits are counted across processes in marks.
func killingGit(real, marks string) string {
	return `#!/bin/sh
"` + real + `" "$@"
code=$?
case "$1 $2" in
  "bundle create") kind=bundle ;;
  commit*|fetch*|merge*) kind=$1 ;;
  *) exit $code ;;
esac
[ "${GIT_KILL_AT%:*}" = "$kind" ] || exit $code
n=1
while ! mkdir "` + marks + `/$kind.$n" 2>/dev/null; do n=$((n + 1)); done
[ "$n" = "${GIT_KILL_AT#*:}" ] || exit $code
victim=$PPID
[ "$kind" = commit ] && victim=$(cat "` + marks + `/$RUNNER_WORKER.pid")
echo "$kind $n $victim" > "` + marks + `/killed"
kill -9 "$victim"
exit $code
`
}

// gitCrashRig is a user's repository with a job of gitCrashWorkflow, two
// clones of it, each served by a worker, and killingGit first on the PATH
// of every runner process it starts.
type gitCrashRig struct {
	t                 *testing.T
	repo, runs, marks string
	tmp               string // the coordinators' TMPDIR
	crashRunner       string // runner built with crash points, for workers killed mid-upload
	clones            []string
	workers           []*testWorker
	env               []string // git's identity and the PATH with killingGit
	url               string
	git               func(in string, args ...string) string
}

// newGitCrashRig makes the repository and its clones and starts a worker
// in each on url, with GIT_KILL_AT=workerKill ("" for none).
func newGitCrashRig(t *testing.T, url, workerKill string) *gitCrashRig {
	t.Helper()
	realGit, err := exec.LookPath("git")
	if err != nil {
		t.Skip("no git")
	}
	dir := t.TempDir()
	r := &gitCrashRig{t: t, runs: filepath.Join(dir, "runs.log"), marks: filepath.Join(dir, "marks"), tmp: filepath.Join(dir, "tmp"), url: url}
	if strings.HasPrefix(workerKill, "upload:") {
		r.crashRunner = crashPointRunner(t)
	}
	bin := filepath.Join(dir, "bin")
	for _, d := range []string{bin, r.marks, r.tmp} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	writeFile(t, bin, "git", killingGit(realGit, r.marks))
	if err := os.Chmod(filepath.Join(bin, "git"), 0o755); err != nil {
		t.Fatal(err)
	}
	r.env = append(slices.Clone(testGitIdentity), "PATH="+bin+string(filepath.ListSeparator)+os.Getenv("PATH"), "GIT_KILL_AT=")
	r.git = gitRunner(t, realGit)
	r.repo = testkit.GitRepo(t, map[string]string{"w.yml": gitCrashWorkflow(r.runs), ".gitignore": ".runner/\n"}).Dir
	for i := range 2 {
		clone := filepath.Join(dir, fmt.Sprintf("clone%d", i+1))
		r.git(dir, "clone", "-q", r.repo, clone)
		r.clones = append(r.clones, clone)
		r.workers = append(r.workers, r.startWorker(i, fmt.Sprintf("w%d", i+1), workerKill))
	}
	return r
}

// startWorker starts a worker named name in clone i, its pid in marks.
// The workers of a clone share their temporary directory, as those
// started again on one machine do: a worker sweeps the store of a killed
// one there. A worker whose kill is "upload:N" is r.crashRunner, killed
// by crash point BundleChunkSent: during the upload of item N's bundle.
func (r *gitCrashRig) startWorker(i int, name, kill string) *testWorker {
	env := append(append(os.Environ(), r.env...), "GIT_KILL_AT="+kill, "TMPDIR="+r.clones[i]+".tmp")
	if err := os.MkdirAll(r.clones[i]+".tmp", 0o700); err != nil {
		r.t.Fatal(err)
	}
	bin := "runner"
	if item, ok := strings.CutPrefix(kill, "upload:"); ok {
		bin = r.crashRunner
		env = append(env, "RUNNER_CRASHPOINT="+crashpoint.BundleChunkSent, "GIT_CRASH_BIG_ITEM="+item)
	}
	w := startWorkerBin(r.t, bin, r.clones[i], r.url, "git", name, env)
	writeFile(r.t, r.marks, name+".pid", strconv.Itoa(w.Process.Pid))
	return w
}

// run starts `runner run` of the job (or `runner resume` once it exists)
// with GIT_KILL_AT=kill.
func (r *gitCrashRig) run(kill string) (*exec.Cmd, <-chan struct{}) {
	args := []string{"resume", "j"}
	if _, err := os.Stat(state.Store{Dir: filepath.Join(r.repo, ".runner")}.Layout("j").Meta); err != nil {
		args = []string{"run", "--nats", r.url, "--queue", "git", "--job-id", "j", "w.yml"}
	}
	cmd, _, exited := startRunnerEnv(r.t, r.repo, append(r.env, "GIT_KILL_AT="+kill, "TMPDIR="+r.tmp), args...)
	return cmd, exited
}

// ended waits for a coordinator and checks that it ended the job (exit 0).
func (r *gitCrashRig) ended(cmd *exec.Cmd, exited <-chan struct{}) {
	r.t.Helper()
	waitExit(r.t, exited)
	if code := cmd.ProcessState.ExitCode(); code != 0 {
		r.t.Fatalf("runner %s: exit %d, want 0; DLQ: %+v", strings.Join(cmd.Args[1:], " "), code, dlqFailures(r.t, r.repo, "j"))
	}
}

// killed is what killingGit killed ("" when nothing yet).
func (r *gitCrashRig) killed() string {
	data, _ := os.ReadFile(filepath.Join(r.marks, "killed"))
	return strings.TrimSpace(string(data))
}

// audit checks the ended job: every item succeeded, its commit and its
// merge on the job branch exactly once, the extra runs (returned) at
// most maxExtra, and nothing left: no worktree or item branch in the
// clones nor in the user's repository, no bundle in the workers' or the
// coordinator's temporary directories, no git bucket and no message of
// the job on the server.
func (r *gitCrashRig) audit(nc *nats.Conn, maxExtra int) (extra int) {
	t := r.t
	t.Helper()
	counts := auditJob(t, state.Store{Dir: filepath.Join(r.repo, ".runner")}, "j", gitCrashItems, true)
	if counts[state.ItemSucceeded] != gitCrashItems {
		t.Errorf("end state %v, want every item succeeded", counts)
	}
	merges := r.git(r.repo, "log", "--merges", "--first-parent", "--format=%s", "runner/j")
	commits := r.git(r.repo, "log", "--no-merges", "--format=%s", "runner/j")
	for i := 1; i <= gitCrashItems; i++ {
		id := strconv.Itoa(i)
		m, c := strings.Count(merges+"\n", "Merge "+id+" (runner job j)\n"), strings.Count(commits+"\n", "item "+id+"\n")
		if m != 1 || c != 1 {
			t.Errorf("item %s: merged %d times, its commit %d times on the job branch; want 1", id, m, c)
		}
	}
	extra = len(readLines(t, r.runs)) - gitCrashItems
	if extra < 0 || extra > maxExtra {
		t.Errorf("%d extra runs, want 0 to %d (the items in flight at the crash)", extra, maxExtra)
	}
	// A worker may still run a task the server delivered again after a
	// crash, whose item has ended: it ends soon and leaves nothing.
	var left []string
	testkit.Poll(func() bool { left = r.leftovers(nc); return len(left) == 0 })
	for _, l := range left {
		t.Error(l)
	}
	return extra
}

// leftovers says what the ended job left: item branches in the user's
// repository, worktrees or item branches in the clones, files in the
// coordinators' temporary directory, bundles or branch notes in the
// workers' stores, a git bucket or a message on the server.
func (r *gitCrashRig) leftovers(nc *nats.Conn) []string {
	t := r.t
	t.Helper()
	var left []string
	if b := r.git(r.repo, "branch", "--list", "runner-items/*"); b != "" {
		left = append(left, "item branches left in the user's repository: "+b)
	}
	for i, clone := range r.clones {
		if trees := strings.Count(r.git(clone, "worktree", "list", "--porcelain"), "worktree "); trees != 1 {
			left = append(left, fmt.Sprintf("clone %d: %d worktrees once the job ended, want its own alone", i+1, trees))
		}
		if b := r.git(clone, "branch", "--list", "runner-items/*"); b != "" {
			left = append(left, fmt.Sprintf("clone %d keeps item branches: %s", i+1, b))
		}
	}
	temps := []string{filepath.Join(r.tmp, "*")}
	for _, clone := range r.clones {
		temps = append(temps, filepath.Join(clone+".tmp", "runner-worker-*", "bundle-*"), filepath.Join(clone+".tmp", "runner-worker-*", "branch-*"))
	}
	for _, pattern := range temps {
		if files, _ := filepath.Glob(pattern); len(files) > 0 {
			left = append(left, fmt.Sprintf("temporary files left: %v", files))
		}
	}
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	for name := range js.StreamNames(t.Context()).Name() {
		if strings.HasPrefix(name, "OBJ_RUNNER_GIT_") {
			left = append(left, "git bucket left on the server: "+name)
		}
	}
	for _, name := range []string{natsconn.TasksStream, natsconn.ResultsStream} {
		s, err := js.Stream(t.Context(), name)
		if err != nil {
			t.Fatal(err)
		}
		if info, err := s.Info(t.Context()); err != nil || info.State.Msgs != 0 {
			left = append(left, fmt.Sprintf("stream %s: messages left (%v, %v)", name, info, err))
		}
	}
	return left
}

// waitStoresFree waits, for at most 10 s, until no process holds the
// lock of a worker's store in tmp: a child the killed worker was
// starting holds a copy of the lock's descriptor until it runs its
// program (its watchdog holds none), and a worker started meanwhile
// leaves the store for the next one to sweep.
func (r *gitCrashRig) waitStoresFree(tmp string) {
	locks, _ := filepath.Glob(filepath.Join(tmp, "runner-worker-*", "worker.lock"))
	for _, path := range locks {
		testkit.Poll(func() bool {
			f, err := os.Open(path)
			if err != nil {
				return true
			}
			defer f.Close()
			return syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) == nil
		})
	}
}

// waitWorkerKilled waits for killingGit to kill a worker of the rig and
// starts another in the same clone; it reports false if the coordinator
// ended first.
func (r *gitCrashRig) waitWorkerKilled(exited <-chan struct{}) bool {
	for i, w := range r.workers {
		select {
		case <-w.exited:
			r.waitStoresFree(r.clones[i] + ".tmp")
			r.workers[i] = r.startWorker(i, w.name+"-again", "")
			return true
		default:
		}
	}
	select {
	case <-exited:
		return false
	case <-time.After(50 * time.Millisecond):
		return r.waitWorkerKilled(exited)
	}
}

// TestNATSGitWorkerCrash kills a worker with kill -9 just after an item
// committed in its worktree (mid-commit: its result not sent), just after
// it made the bundle of an item's branch, or during the upload of that
// bundle, its first chunk in the job's bucket (mid-upload), and starts
// another worker in the same clone: nothing of the killed run is merged,
// the item runs again, each item is merged exactly once, the extra runs
// are at most the killed worker's items in flight, and nothing is left:
// the worker started again in the clone deletes the branches the killed
// one held, the job's end the bucket with the partial upload (SPEC §9.2,
// §11.9.3).
func TestNATSGitWorkerCrash(t *testing.T) {
	skipNATSProcesses(t, "")
	t.Parallel()
	parallelRounds(t, func(t *testing.T, rng *rand.Rand) {
		srv := natstest.Start(t)
		kill := []string{"commit", "bundle", "upload"}[rng.IntN(3)] + ":" + strconv.Itoa(1+rng.IntN(gitCrashItems))
		r := newGitCrashRig(t, srv.URL(), kill)
		cmd, exited := r.run("")
		if !r.waitWorkerKilled(exited) {
			t.Fatalf("the job ended before a worker was killed at %s", kill)
		}
		nc := srv.Connect(t)
		r.uploadCut(nc, kill)
		r.ended(cmd, exited)
		extra := r.audit(nc, gitCrashSlots)
		r.uploadNotMerged(kill)
		t.Logf("killed at %s (%s): %d extra runs", kill, r.killed(), extra)
	})
}

// uploadCut checks, after a worker was killed at kill "upload:N", that
// the killed upload's first chunk (128 KiB, of the big file's bundle) is
// in the job's git bucket: the worker died mid-upload. The chunk is there
// before the job can end (the killed item's task is delivered again only
// once its ack wait, natsAckWait, has run out).
func (r *gitCrashRig) uploadCut(nc *nats.Conn, kill string) {
	if !strings.HasPrefix(kill, "upload:") {
		return
	}
	js, err := jetstream.New(nc)
	if err != nil {
		r.t.Fatal(err)
	}
	var stored uint64
	if testkit.Poll(func() bool {
		for name := range js.StreamNames(r.t.Context()).Name() {
			if s, err := js.Stream(r.t.Context(), name); err == nil && strings.HasPrefix(name, "OBJ_RUNNER_GIT_") {
				stored = s.CachedInfo().State.Bytes
			}
		}
		return stored >= 128<<10
	}) {
		return
	}
	r.t.Errorf("the job's git bucket holds %d bytes after the kill at %s, want the killed upload's first chunk (128 KiB)", stored, kill)
}

// uploadNotMerged checks, after a worker was killed at kill "upload:N",
// that nothing of the killed run's partly uploaded bundle reached the job
// branch: its big file, which only that run made, is not there.
func (r *gitCrashRig) uploadNotMerged(kill string) {
	item, ok := strings.CutPrefix(kill, "upload:")
	if !ok {
		return
	}
	if _, err := os.Stat(r.runs + ".big"); err != nil {
		r.t.Errorf("item %s never made its big file: %v", item, err)
	}
	if tree := r.git(r.repo, "ls-tree", "--name-only", "runner/j", "big-"+item+".bin"); tree != "" {
		r.t.Errorf("the killed run of item %s was merged: %s on the job branch", item, tree)
	}
}

// TestNATSGitCoordinatorCrash kills the coordinator with kill -9 just
// after it fetched an item's bundle into the user's repository, or just
// after it merged an item's branch, before it recorded the merge: `runner
// resume` merges each succeeded item exactly once (the already-merged
// check works on fetched branches), no item runs again, nothing is left.
func TestNATSGitCoordinatorCrash(t *testing.T) {
	skipNATSProcesses(t, "")
	t.Parallel()
	parallelRounds(t, func(t *testing.T, rng *rand.Rand) {
		srv := natstest.Start(t)
		r := newGitCrashRig(t, srv.URL(), "")
		kill := []string{"fetch", "merge"}[rng.IntN(2)] + ":" + strconv.Itoa(1+rng.IntN(gitCrashItems))
		cmd, exited := r.run(kill)
		waitExit(t, exited)
		if cmd.ProcessState.Success() || r.killed() == "" {
			t.Fatalf("the coordinator was not killed at %s", kill)
		}
		cmd, exited = r.run("")
		r.ended(cmd, exited)
		extra := r.audit(srv.Connect(t), 0)
		t.Logf("killed at %s (%s): %d extra runs", kill, r.killed(), extra)
	})
}

// TestNATSGitServerCrash kills the NATS server with kill -9 while worktree
// items run and starts it again on its store after 0 to 1 s: the job
// ends with every item merged exactly once, at most the items in flight
// run again, and nothing is left.
func TestNATSGitServerCrash(t *testing.T) {
	skipNATSProcesses(t, "")
	t.Parallel()
	parallelRounds(t, func(t *testing.T, rng *rand.Rand) {
		srv := natstest.Process(t, t.TempDir(), 0)
		r := newGitCrashRig(t, srv.URL(), "")
		cmd, exited := r.run("")
		at := 1 + rng.IntN(gitCrashItems-1)
		waitForLines(r.runs, at, exited)
		srv.Kill()
		time.Sleep(time.Duration(rng.IntN(1000)) * time.Millisecond)
		srv.Restart()
		r.ended(cmd, exited)
		extra := r.audit(srv.Connect(t), gitCrashWindow)
		t.Logf("server killed after %d runs began: %d extra runs", at, extra)
	})
}

// TestNATSGitServerStoreLost kills the NATS server with kill -9 while
// worktree items run and starts it again on a new, empty store (its -sd
// lost: the job's git bucket with everything else): the coordinator makes
// the bucket again, with the commits its items start from, before it
// sends their tasks again, and every item, those not yet started among
// them, runs and is merged exactly once; nothing goes to the DLQ and
// nothing is left (issue 35.4: every item failed as transfer, "bucket not
// found", exit 3).
func TestNATSGitServerStoreLost(t *testing.T) {
	skipNATSProcesses(t, "waits for the coordinator and the workers to find the server's store lost")
	t.Parallel()
	srv := natstest.Process(t, t.TempDir(), 0)
	r := newGitCrashRig(t, srv.URL(), "")
	cmd, exited := r.run("")
	waitForLines(r.runs, 2, exited)
	srv.Kill()
	srv.RestartEmpty()
	r.ended(cmd, exited)
	extra := r.audit(srv.Connect(t), gitCrashWindow)
	t.Logf("%d extra runs", extra)
}
