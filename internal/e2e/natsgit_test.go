package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/runnerdev/runner/internal/natstest"
	"github.com/runnerdev/runner/internal/state"
	"github.com/runnerdev/runner/internal/testkit"
)

// natsGitWorkflow's items run in worktrees and commit a file each: items
// 5 and 6 the same file with different contents (the second merged
// conflicts); every run is logged to runs.
func natsGitWorkflow(runs string) string {
	return `mode: mapreduce
map:
  input: seq 1 6
  max_parallel: 4
  isolation: worktree
  agent_template:
    - shell: |
        echo "${item} $RUNNER_WORKER" >> ` + runs + `
        case ${item} in 5|6) echo ${item} > shared.txt ;; *) echo ${item} > item-${item}.txt ;; esac
        git add -A && git commit -qm "item ${item}"
`
}

// damagingGit is a git in front of the real one (at real) that damages
// the bundles it makes of item 4's branch: the pack after the header gets
// bytes of garbage, as a disk or a network could.
func damagingGit(real string) string {
	return `#!/bin/sh
"` + real + `" "$@" || exit $?
if [ "$1 $2" = "bundle create" ]; then
  case "$*" in *runner-items/j/4*)
    size=$(wc -c < "$4")
    printf 'garbage!garbage!' | dd of="$4" bs=1 seek=$((size - 24)) conv=notrunc 2>/dev/null ;;
  esac
fi
`
}

// TestNATSWorktreeClones runs worktree items on two NATS workers whose
// --work-dir are two clones of the user's repository, made before the job
// (SPEC §9.2 on NATS): the job branch's tips reach them as bundles through
// the job's git bucket, each item commits in a worktree of its worker's
// clone, and its commits come back as a bundle that the coordinator
// fetches under the item's branch and merges into the job branch once.
// Item 4's bundle is damaged on the worker: the item fails as kind
// transfer, into the DLQ, and nothing of it is merged. Items 5 and 6
// conflict: the second merged is in the DLQ as merge_conflict, its branch
// kept in the user's repository. Nothing is left in the clones (no
// worktree, no item branch) nor on the server (the job's git bucket).
func TestNATSWorktreeClones(t *testing.T) {
	skipNATSProcesses(t, "")
	t.Parallel()
	realGit, err := exec.LookPath("git")
	if err != nil {
		t.Skip("no git")
	}
	dir := t.TempDir()
	identity, git := testGitIdentity, gitRunner(t, realGit)
	bin, runs := filepath.Join(dir, "bin"), filepath.Join(dir, "runs.log")
	if err := os.Mkdir(bin, 0o700); err != nil {
		t.Fatal(err)
	}
	repo := testkit.GitRepo(t, map[string]string{"w.yml": natsGitWorkflow(runs), ".gitignore": ".runner/\n"}).Dir
	writeFile(t, bin, "git", damagingGit(realGit))
	if err := os.Chmod(filepath.Join(bin, "git"), 0o755); err != nil {
		t.Fatal(err)
	}
	workerEnv := append(append(os.Environ(), identity...), "PATH="+bin+string(filepath.ListSeparator)+os.Getenv("PATH"))

	srv := natstest.Start(t)
	var clones []string
	for _, name := range []string{"w1", "w2"} {
		clone := filepath.Join(dir, "clone-"+name)
		git(dir, "clone", "-q", repo, clone)
		clones = append(clones, clone)
		startWorkerArgs(t, clone, srv.URL(), "git", name, workerEnv)
	}
	code, out := runRunner(repo, identity, "run", "--nats", srv.URL(), "--queue", "git", "--job-id", "j", "w.yml")
	if code != 3 {
		t.Fatalf("run: exit %d, want 3 (items 4 and one of 5, 6 in the DLQ)\n%s", code, out)
	}

	failures := dlqFailures(t, repo, "j")
	if f := failures["4"]; len(f) != 1 || f[0].Kind != "transfer" || !strings.Contains(f[0].Message, "item/") {
		t.Errorf("item 4's DLQ failures %+v, want one of kind transfer naming its bundle", f)
	}
	conflicted := ""
	for _, id := range []string{"5", "6"} {
		if f := failures[id]; len(f) == 1 && f[0].Kind == "merge_conflict" && strings.Contains(f[0].Message, "runner-items/j/"+id+" is kept") {
			conflicted = id
		}
	}
	if conflicted == "" || len(failures) != 2 {
		t.Fatalf("DLQ %+v, want item 4 and one of 5, 6 (merge_conflict, its branch kept)", failures)
	}
	if git(repo, "log", "-1", "--format=%s", "runner-items/j/"+conflicted) != "item "+conflicted {
		t.Errorf("the kept branch of item %s does not hold its commit", conflicted)
	}

	merges := git(repo, "log", "--merges", "--first-parent", "--format=%s", "runner/j")
	commits := git(repo, "log", "--no-merges", "--format=%s", "runner/j")
	for _, id := range []string{"1", "2", "3", "4", "5", "6"} {
		want := 1
		if id == "4" || id == conflicted {
			want = 0
		}
		m, c := strings.Count(merges+"\n", "Merge "+id+" (runner job j)\n"), strings.Count(commits+"\n", "item "+id+"\n")
		if m != want || c != want {
			t.Errorf("item %s: merged %d times, its commit %d times on the job branch; want %d", id, m, c, want)
		}
	}
	if head := git(repo, "log", "-1", "--format=%s", "main"); head != "base" {
		t.Errorf("the user's branch moved to %q", head)
	}
	if left := git(repo, "branch", "--list", "--format=%(refname:short)", "runner-items/j/*"); left != "runner-items/j/"+conflicted {
		t.Errorf("item branches in the user's repository: %q, want the conflicted item's alone", left)
	}

	ranOn := map[string]bool{}
	for _, line := range readLines(t, runs) {
		if _, worker, ok := strings.Cut(line, " "); ok {
			ranOn[worker] = true
		}
	}
	for i, clone := range clones {
		if trees := strings.Count(git(clone, "worktree", "list", "--porcelain"), "worktree "); trees != 1 {
			t.Errorf("clone %d: %d worktrees once the job ended, want its own alone", i+1, trees)
		}
		if left := git(clone, "branch", "--list", "runner-items/*"); left != "" {
			t.Errorf("clone %d keeps item branches: %s", i+1, left)
		}
	}
	if len(ranOn) != 2 {
		t.Logf("the items ran on %v only", ranOn)
	}
	auditJob(t, state.Store{Dir: filepath.Join(repo, ".runner")}, "j", 6, true)
	if buckets := gitBuckets(t, srv); len(buckets) != 0 {
		t.Errorf("git buckets left on the server: %v", buckets)
	}
}

// testGitIdentity is the git identity and configuration of the tests'
// commits.
var testGitIdentity = []string{"GIT_AUTHOR_NAME=runner-test", "GIT_AUTHOR_EMAIL=test@example.com", "GIT_COMMITTER_NAME=runner-test",
	"GIT_COMMITTER_EMAIL=test@example.com", "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1"}

// gitRunner returns a function that runs the git at path in a directory
// with testGitIdentity and returns its output, failing t on an error.
func gitRunner(t *testing.T, path string) func(in string, args ...string) string {
	return func(in string, args ...string) string {
		t.Helper()
		cmd := exec.Command(path, append([]string{"-C", in}, args...)...)
		cmd.Env = append(os.Environ(), testGitIdentity...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return strings.TrimSpace(string(out))
	}
}

// gitBuckets lists the jobs' git buckets on the server.
func gitBuckets(t *testing.T, srv interface{ Connect(testing.TB) *nats.Conn }) []string {
	t.Helper()
	js, err := jetstream.New(srv.Connect(t))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for name := range js.StreamNames(t.Context()).Name() {
		if strings.HasPrefix(name, "OBJ_RUNNER_GIT_") {
			names = append(names, name)
		}
	}
	return names
}
