package natsworker

import (
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/runnerdev/runner/internal/gitwork"
	"github.com/runnerdev/runner/internal/itemtask"
	"github.com/runnerdev/runner/internal/natsconn"
	"github.com/runnerdev/runner/internal/natstest"
)

// gitEnv is git's environment in these tests: a fixed identity, no user
// or system configuration.
func gitEnv() []string {
	return append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t",
		"GIT_COMMITTER_EMAIL=t@example.com", "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
}

// A worker whose clone has the thin bundle's base fetches the tip from
// the thin bundle; one whose clone lacks it, from the full one; one whose
// clone has the tip fetches nothing. (The full bundle here is garbage: a
// clone that reads it fails.)
func TestFetchTipThinOrFull(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	env := gitEnv()
	run := func(g gitwork.Git, args ...string) string {
		t.Helper()
		out, err := g.Output(t.Context(), args...)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	src := gitwork.Git{Dir: t.TempDir(), Env: env}
	run(src, "init", "-q", "-b", "main")
	run(src, "commit", "-q", "--allow-empty", "-m", "base")
	base := run(src, "rev-parse", "HEAD")
	withBase := gitwork.Git{Dir: t.TempDir(), Env: env}
	run(withBase, "clone", "-q", "--no-local", src.Dir, ".")
	run(src, "commit", "-q", "--allow-empty", "-m", "tip")
	tip := run(src, "rev-parse", "HEAD")
	empty := gitwork.Git{Dir: t.TempDir(), Env: env}
	run(empty, "init", "-q")

	js, err := jetstream.New(natstest.Start(t).Connect(t))
	if err != nil {
		t.Fatal(err)
	}
	objs, err := natsconn.OpenObjects(t.Context(), js, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	store, err := objs.GitStore(t.Context(), "k", true)
	if err != nil {
		t.Fatal(err)
	}
	run(src, "update-ref", natsconn.TipRef(tip), tip)
	thin := t.TempDir() + "/thin"
	if err := src.CreateBundle(t.Context(), thin, natsconn.TipRef(tip), base); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(thin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := store.Put(t.Context(), jetstream.ObjectMeta{Name: natsconn.TipBundle(tip, true), Metadata: map[string]string{natsconn.MetaBase: base}}, f); err != nil {
		t.Fatal(err)
	}
	if _, err := store.PutString(t.Context(), natsconn.TipBundle(tip, false), "not a bundle"); err != nil {
		t.Fatal(err)
	}

	w := &Worker{objs: objs, opts: WorkerOptions{StoreDir: t.TempDir(), AckWait: time.Second}}
	fetch := func(clone gitwork.Git) error {
		return w.fetchTip(t.Context(), &workerJob{key: "k", opened: itemtask.Opened{Repo: clone.Dir}}, tip)
	}
	if err := fetch(withBase); err != nil || !withBase.HasCommit(t.Context(), tip) {
		t.Fatalf("a clone with the base: %v; want the tip fetched from the thin bundle", err)
	}
	if err := fetch(empty); err == nil || !strings.Contains(err.Error(), natsconn.TipBundle(tip, false)) {
		t.Errorf("a clone without the base: %v; want the full bundle read (and refused)", err)
	}
	if err := store.Delete(t.Context(), natsconn.TipBundle(tip, true)); err != nil {
		t.Fatal(err)
	}
	if err := fetch(withBase); err != nil {
		t.Errorf("a clone with the tip: %v; want nothing fetched", err)
	}
}

// A worker that starts in a clone forgets the worktrees whose directories
// a killed worker's store took with it.
func TestNewWorkerForgetsLeftWorktrees(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	repo := gitwork.Git{Dir: t.TempDir(), Env: gitEnv()}
	store := t.TempDir()
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"commit", "-q", "--allow-empty", "-m", "base"}, {"worktree", "add", "-q", "-b", "runner-items/j/1", store + "/wt"}} {
		if _, err := repo.Output(t.Context(), args...); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.RemoveAll(store); err != nil {
		t.Fatal(err)
	}
	t.Chdir(repo.Dir)
	if _, err := NewWorker(t.Context(), WorkerOptions{Conn: natstest.Start(t).Connect(t), Queue: natsconn.DefaultQueue, Concurrency: 1, Name: "w",
		AckWait: 2 * time.Second, StoreDir: t.TempDir(), Log: io.Discard}); err != nil {
		t.Fatal(err)
	}
	if list, _ := repo.Output(t.Context(), "worktree", "list", "--porcelain"); strings.Count(list, "worktree ") != 1 {
		t.Errorf("the clone's worktrees after a worker started:\n%s", list)
	}
}
