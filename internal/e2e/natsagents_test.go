package e2e

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/runnerdev/runner/internal/natstest"
	"github.com/runnerdev/runner/internal/testkit"
)

// docBlock returns the first ```sh block after the line of path that
// starts with marker.
func docBlock(t *testing.T, path, marker string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(data), "\n"+marker)
	if !ok {
		t.Fatalf("%s has no line starting with %q", path, marker)
	}
	_, block, ok := strings.Cut(after, "```sh\n")
	if ok {
		block, _, ok = strings.Cut(block, "```")
	}
	if !ok {
		t.Fatalf("%s: no ```sh block after %q", path, marker)
	}
	return block
}

// natsServerShim is a nats-server that takes the flags the docs give it
// (-p PORT, -sd DIR) and is the test binary serving as a server.
func natsServerShim() string {
	return `#!/bin/sh
while [ $# -gt 0 ]; do
  case $1 in -p) port=$2; shift ;; -sd) sd=$2; shift ;; esac
  shift
done
RUNNER_NATSTEST_SERVER="$sd:$port" exec "` + os.Args[0] + `" -test.run='^$'
`
}

// TestAgentsExampleOnNATS runs the commands of docs/agents.md "On many
// machines" as written (a free port for 4222, the test's directory for
// /tmp, nats-server the test binary serving as one): examples/agents with
// the stand-in agent on two NATS workers in two clones. The run merges
// three tasks and puts the fourth in the DLQ as merge_conflict; dlq retry
// merges it; resume --merge takes the job branch into the user's branch.
// Each task is merged once, and nothing is left in the clones.
func TestAgentsExampleOnNATS(t *testing.T) {
	skipNATSProcesses(t, "")
	t.Parallel()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	dir, bin := t.TempDir(), t.TempDir()
	writeFile(t, bin, "nats-server", natsServerShim())
	if err := os.Chmod(filepath.Join(bin, "nats-server"), 0o755); err != nil {
		t.Fatal(err)
	}
	block := docBlock(t, repoPath(t, "docs", "agents.md"), "**On many machines**")
	block = strings.NewReplacer("/tmp/", dir+"/", "4222", strconv.Itoa(natstest.FreePort(t))).Replace(block)

	ctx, cancel := context.WithTimeout(t.Context(), testkit.Scale(2*time.Minute))
	defer cancel()
	sh := exec.CommandContext(ctx, "sh", "-c", block)
	sh.Dir = repoPath(t)
	sh.Env = append(append(os.Environ(), testGitIdentity...), "PATH="+bin+string(filepath.ListSeparator)+os.Getenv("PATH"))
	sh.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	sh.WaitDelay = time.Second // the server and the workers keep its output open
	out, err := sh.CombinedOutput()
	_ = syscall.Kill(-sh.Process.Pid, syscall.SIGKILL) // the server and the workers it started
	if ctx.Err() != nil || err != nil && !errors.Is(err, exec.ErrWaitDelay) {
		t.Fatalf("the commands: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "merge_conflict") {
		t.Errorf("dlq list shows no merge_conflict:\n%s", out)
	}

	repo := filepath.Join(dir, "agents-nats")
	if logs := grepFiles(t, filepath.Join(repo, ".runner"), "never started"); len(logs) > 0 {
		t.Errorf("the stand-in agent waited for tasks other clones ran: %v", logs)
	}
	git := gitRunner(t, "git")
	merges := git(repo, "log", "--merges", "--first-parent", "--format=%s", "runner/docs") + "\n"
	for _, task := range []string{"typos-intro", "typos-install", "typos-usage", "retitle-intro"} {
		if n := strings.Count(merges, "Merge "+task+" (runner job docs)\n"); n != 1 {
			t.Errorf("task %s merged %d times into runner/docs, want once\n%s", task, n, out)
		}
	}
	if base, job := git(repo, "merge-base", "HEAD", "runner/docs"), git(repo, "rev-parse", "runner/docs"); base != job {
		t.Errorf("the user's branch does not hold the job branch's %s: resume --merge did not take it\n%s", job, out)
	}
	if left := git(repo, "branch", "--list", "runner-items/*"); left != "" {
		t.Errorf("item branches left: %s", left)
	}
	for _, w := range []string{"w1", "w2"} {
		clone := filepath.Join(dir, "agents-"+w)
		if trees := strings.Count(git(clone, "worktree", "list", "--porcelain"), "worktree "); trees != 1 {
			t.Errorf("clone of %s: %d worktrees, want its own alone", w, trees)
		}
	}
}

// grepFiles lists the files under dir that contain text.
func grepFiles(t *testing.T, dir, text string) []string {
	t.Helper()
	var found []string
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		if data, err := os.ReadFile(path); err == nil && strings.Contains(string(data), text) {
			found = append(found, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return found
}
