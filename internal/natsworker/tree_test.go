package natsworker

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/runnerdev/runner/internal/gitwork"
	"github.com/runnerdev/runner/internal/itemtask"
	"github.com/runnerdev/runner/internal/natsconn"
	"github.com/runnerdev/runner/internal/natstest"
	"github.com/runnerdev/runner/internal/testkit"
)

// gitEnv is git's environment in these tests: a fixed identity, no user
// or system configuration.
func gitEnv() []string {
	return append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t",
		"GIT_COMMITTER_EMAIL=t@example.com", "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
}

// A worker whose clone has the thin bundle's base fetches the tip from
// the thin bundle alone; one whose clone lacks the base fetches the base's
// full bundle first (a damaged one fails, named); with no thin bundle,
// the tip's full one; a clone that has the tip fetches nothing.
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
	repo := func(args ...string) gitwork.Git {
		g := gitwork.Git{Dir: t.TempDir(), Env: env}
		run(g, args...)
		return g
	}
	src := repo("init", "-q", "-b", "main")
	run(src, "commit", "-q", "--allow-empty", "-m", "base")
	base := run(src, "rev-parse", "HEAD")
	withBase := repo("clone", "-q", "--no-local", src.Dir, ".")
	run(src, "commit", "-q", "--allow-empty", "-m", "tip")
	tip := run(src, "rev-parse", "HEAD")

	js, err := jetstream.New(natstest.Start(t).Connect(t))
	if err != nil {
		t.Fatal(err)
	}
	objs, err := natsconn.OpenObjects(t.Context(), js, io.Discard, 0)
	if err != nil {
		t.Fatal(err)
	}
	store, err := objs.GitStore(t.Context(), "k", true)
	if err != nil {
		t.Fatal(err)
	}
	put := func(name, sha, from string) {
		t.Helper()
		run(src, "update-ref", natsconn.TipRef(sha), sha)
		path := t.TempDir() + "/b"
		if err := src.CreateBundle(t.Context(), path, natsconn.TipRef(sha), from); err != nil {
			t.Fatal(err)
		}
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if _, err := store.Put(t.Context(), jetstream.ObjectMeta{Name: name, Metadata: map[string]string{natsconn.MetaBase: from}}, f); err != nil {
			t.Fatal(err)
		}
	}
	put(natsconn.TipBundle(tip, true), tip, base)
	if _, err := store.PutString(t.Context(), natsconn.TipBundle(base, false), "not a bundle"); err != nil {
		t.Fatal(err)
	}

	w := &Worker{objs: objs, opts: WorkerOptions{StoreDir: t.TempDir(), AckWait: testkit.Scale(time.Second)}}
	fetch := func(clone gitwork.Git) error {
		return w.fetchTip(t.Context(), &workerJob{key: "k", opened: itemtask.Opened{Repo: clone.Dir}}, tip)
	}
	if err := fetch(withBase); err != nil || !withBase.HasCommit(t.Context(), tip) {
		t.Fatalf("a clone with the base: %v; want the tip fetched from the thin bundle", err)
	}
	if err := fetch(withBase); err != nil {
		t.Errorf("a clone with the tip: %v; want nothing fetched", err)
	}
	empty := repo("init", "-q")
	if err := fetch(empty); err == nil || !strings.Contains(err.Error(), natsconn.TipBundle(base, false)) {
		t.Errorf("a clone without the base: %v; want the base's full bundle read (and refused)", err)
	}
	put(natsconn.TipBundle(base, false), base, "")
	if err := fetch(empty); err != nil || !empty.HasCommit(t.Context(), tip) {
		t.Errorf("a clone without the base: %v; want the base's full bundle, then the thin one", err)
	}
	if err := store.Delete(t.Context(), natsconn.TipBundle(tip, true)); err != nil {
		t.Fatal(err)
	}
	put(natsconn.TipBundle(tip, false), tip, "")
	if other := repo("init", "-q"); fetch(other) != nil || !other.HasCommit(t.Context(), tip) {
		t.Errorf("with no thin bundle: want the tip's full one fetched")
	}
	// The fetch runs under the clone's worktree lock: git's fetch reads
	// every worktree's HEAD, which one half made breaks.
	busy := errors.New("an item's worktree is being made")
	locked := &workerJob{key: "k", opened: itemtask.Opened{Repo: repo("init", "-q").Dir, Hold: func(func() error) error { return busy }}}
	if err := w.fetchTip(t.Context(), locked, tip); !errors.Is(err, busy) {
		t.Errorf("a fetch with the clone's worktree lock refused: %v; want that refusal", err)
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
		AckWait: testkit.Scale(2 * time.Second), StoreDir: t.TempDir(), Log: io.Discard}); err != nil {
		t.Fatal(err)
	}
	if list, _ := repo.Output(t.Context(), "worktree", "list", "--porcelain"); strings.Count(list, "worktree ") != 1 {
		t.Errorf("the clone's worktrees after a worker started:\n%s", list)
	}
}

// newClone makes a git repository with one commit, returned with it.
func newClone(t *testing.T) (repo gitwork.Git, head string) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	repo = gitwork.Git{Dir: t.TempDir(), Env: gitEnv()}
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"commit", "-q", "--allow-empty", "-m", "base"}} {
		if _, err := repo.Output(t.Context(), args...); err != nil {
			t.Fatal(err)
		}
	}
	head, err := repo.Tip(t.Context(), "main")
	if err != nil {
		t.Fatal(err)
	}
	return repo, head
}

// runnerFunc is an itemtask.Runner of a function.
type runnerFunc func(ctx context.Context, t itemtask.Task) (itemtask.Outcome, error)

func (f runnerFunc) Run(ctx context.Context, t itemtask.Task, _ itemtask.Slot, _ func(itemtask.StepRecord) error) (itemtask.Outcome, error) {
	return f(ctx, t)
}

// A worktree item's branch is noted in the worker's store before its run
// makes it (a worker killed while the run makes its worktree, or after
// the run removed it, leaves the note for the next worker's sweep), and
// once the run ends the branch and the note are gone.
func TestRunItemClaimsBranchBeforeItExists(t *testing.T) {
	repo, head := newClone(t)
	const branch = "runner-items/j/1"
	var claimedInRun []claimedBranch
	w := &Worker{opts: WorkerOptions{StoreDir: t.TempDir(), Name: "w"}}
	wj := &workerJob{opened: itemtask.Opened{Repo: repo.Dir, Branch: func(itemtask.Task) string { return branch },
		Discard: func(ctx context.Context, _ itemtask.Task) error {
			return repo.DiscardWorktree(ctx, filepath.Join(w.opts.StoreDir, "worktree"), branch)
		},
		Runner: runnerFunc(func(ctx context.Context, mt itemtask.Task) (itemtask.Outcome, error) {
			claimedInRun = claimedBranches(w.opts.StoreDir)
			_, err := repo.Output(ctx, "branch", branch, mt.Tip)
			return itemtask.Outcome{Branch: branch}, errors.Join(err, errors.New("the run was stopped"))
		})}}
	if _, _, err := w.runItem(t.Context(), wj, natsconn.Task{Tip: head}, itemtask.Task{}, nil, nil, 1); err == nil {
		t.Fatal("runItem of a stopped run: no error")
	}
	if want := []claimedBranch{{repo.Dir, branch}}; !slices.Equal(claimedInRun, want) {
		t.Errorf("the notes when the run began: %v, want %v", claimedInRun, want)
	}
	if left := claimedBranches(w.opts.StoreDir); len(left) > 0 {
		t.Errorf("notes left once the run ended: %v", left)
	}
	if b, _ := repo.Output(t.Context(), "branch", "--list", "runner-items/*"); b != "" {
		t.Errorf("branches left once the run ended: %s", b)
	}
}

// A dead worker's store holding the worktree of an item running (its
// branch not noted, as a worker before notes were written first left it)
// and a note of another item's branch whose worktree was removed (its
// bundle being sent): the next worker's sweep deletes both branches. The
// sequence of 1 in 40 rounds of TestNATSGitWorkerCrash (killed at bundle
// create): the sweep's git worktree prune, run for the noted branch,
// forgot the running item's worktree, and nothing then said its branch
// was left. A branch the dead store notes that a live worker's store
// notes too (the item runs again on a worker sharing the clone) stays.
func TestSweepDeletesDeadWorkersBranches(t *testing.T) {
	repo, _ := newClone(t)
	tmp := t.TempDir()
	_, releaseLive, err := NewStore(tmp)
	if err != nil {
		t.Fatal(err)
	}
	defer releaseLive()
	live, _ := filepath.Glob(filepath.Join(tmp, storePrefix+"*"))
	dead := filepath.Join(tmp, storePrefix+"dead")
	for _, args := range [][]string{{"worktree", "add", "-q", "-b", "runner-items/j/2", filepath.Join(dead, "worktrees", "2")},
		{"branch", "runner-items/j/3"}, {"branch", "runner-items/j/4"}} {
		if _, err := repo.Output(t.Context(), args...); err != nil {
			t.Fatal(err)
		}
	}
	notes := map[string]string{filepath.Join(dead, storeLock): "", filepath.Join(dead, claimPrefix+"3"): repo.Dir + "\nrunner-items/j/3",
		filepath.Join(dead, claimPrefix+"4"): repo.Dir + "\nrunner-items/j/4", filepath.Join(live[0], claimPrefix+"4"): repo.Dir + "\nrunner-items/j/4"}
	for path, data := range notes {
		if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	_, release, err := NewStore(tmp)
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	if b, _ := repo.Output(t.Context(), "branch", "--list", "runner-items/*"); b != "runner-items/j/4" {
		t.Errorf("branches after the sweep: %q, want the live worker's runner-items/j/4 alone", b)
	}
	if list, _ := repo.Output(t.Context(), "worktree", "list", "--porcelain"); strings.Count(list, "worktree ") != 1 {
		t.Errorf("worktrees left by the sweep:\n%s", list)
	}
}

// A worktree item's run that its server left leaves nothing in the
// worker's clone or store, whatever the phase the server went in: the
// tip's fetch (the task comes again), the run (cut off, its lease run out:
// its git commands killed, the worktree half made by a killed git
// worktree add or half removed by a killed git worktree remove) or the
// upload of its branch (a git bundle create killed midway, which leaves
// its bundle's lock file). Each leftover is named: a worktree, an item
// branch, a file in the store. The sequences of issue 36, where
// TestNATSGitServerCrash failed 6 rounds of 10 beside busy loops. A
// server back on an empty store, without the job's git bucket, leaves the
// branch to a later delivery too, not failed as transfer (issue 35.4).
func TestServerGoneRunLeavesNothing(t *testing.T) {
	realGit, err := exec.LookPath("git")
	if err != nil {
		t.Skip("no git")
	}
	// A git in front of the real one whose bundle create, as git's does,
	// takes its bundle's lock file first, and then hangs until killed,
	// while the file hang is there.
	shim := t.TempDir()
	hang := filepath.Join(shim, "hang")
	if err := os.WriteFile(filepath.Join(shim, "git"), []byte("#!/bin/sh\n"+
		"if [ \"$1 $2\" = \"bundle create\" ] && [ -e \""+hang+"\" ]; then : > \"$4.lock\"; exec sleep 60; fi\n"+
		"exec \""+realGit+"\" \"$@\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", shim+string(filepath.ListSeparator)+os.Getenv("PATH"))
	const branch = "runner-items/j/1"
	for _, phase := range []string{"fetch", "worktree add", "worktree remove", "upload", "bucket lost"} {
		t.Run(phase, func(t *testing.T) {
			src, base := newClone(t)
			clone := gitwork.Git{Dir: t.TempDir(), Env: src.Env}
			if _, err := clone.Output(t.Context(), "clone", "-q", "--no-local", src.Dir, "."); err != nil {
				t.Fatal(err)
			}
			tip := base
			if phase == "fetch" { // the clone lacks the tip
				if _, err := src.Output(t.Context(), "commit", "-q", "--allow-empty", "-m", "tip"); err != nil {
					t.Fatal(err)
				}
				tip, _ = src.Tip(t.Context(), "main")
			}
			srv := natstest.Start(t)
			js, err := jetstream.New(srv.Connect(t))
			if err != nil {
				t.Fatal(err)
			}
			objs, err := natsconn.OpenObjects(t.Context(), js, io.Discard, 0)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := objs.GitStore(t.Context(), "k", true); err != nil {
				t.Fatal(err)
			}
			ctx, cutOff := context.WithCancelCause(t.Context())
			defer cutOff(nil)
			gone := func() { srv.Shutdown(); cutOff(errCutOff) }
			if phase == "fetch" {
				gone()
			}
			path := filepath.Join(t.TempDir(), "1")
			w := &Worker{objs: objs, opts: WorkerOptions{StoreDir: t.TempDir(), Name: "w", Log: io.Discard}}
			admin := func() string {
				common, _ := clone.Output(t.Context(), "rev-parse", "--path-format=absolute", "--git-common-dir")
				return filepath.Join(common, "worktrees", "1")
			}
			run := runnerFunc(func(ctx context.Context, mt itemtask.Task) (itemtask.Outcome, error) {
				for _, args := range [][]string{{"worktree", "add", "-q", "-B", branch, path, mt.Tip}, {"-C", path, "commit", "-q", "--allow-empty", "-m", "item 1"}} {
					if _, err := clone.Output(ctx, args...); err != nil {
						return itemtask.Outcome{}, err
					}
				}
				switch phase {
				case "worktree add": // killed before it wrote the worktree's HEAD
					os.WriteFile(filepath.Join(admin(), "HEAD"), []byte(strings.Repeat("0", 40)+"\n"), 0o600)
					os.WriteFile(filepath.Join(admin(), "locked"), []byte("initializing"), 0o600)
				case "worktree remove": // killed once it had removed the directory
					os.RemoveAll(path)
				case "upload":
					_, err := clone.Output(ctx, "worktree", "remove", "--force", path)
					err = errors.Join(err, os.WriteFile(hang, nil, 0o600))
					t.Cleanup(func() { os.Remove(hang) })
					go func() {
						for range 600 {
							if locks, _ := filepath.Glob(filepath.Join(w.opts.StoreDir, "*", "*.lock")); len(locks) > 0 {
								break
							}
							time.Sleep(10 * time.Millisecond)
						}
						gone()
					}()
					return itemtask.Outcome{Branch: branch, Worktree: path}, err
				case "bucket lost":
					_, err := clone.Output(ctx, "worktree", "remove", "--force", path)
					return itemtask.Outcome{Branch: branch, Worktree: path}, errors.Join(err, objs.DeleteGitStore(ctx, "k"))
				}
				gone()
				return itemtask.Outcome{Branch: branch}, context.Cause(ctx)
			})
			wj := &workerJob{key: "k", opened: itemtask.Opened{Repo: clone.Dir, Runner: run,
				Branch: func(itemtask.Task) string { return branch },
				Discard: func(ctx context.Context, _ itemtask.Task) error {
					return clone.DiscardWorktree(ctx, path, branch)
				}}}
			out, _, err := w.runItem(ctx, wj, natsconn.Task{Tip: tip}, itemtask.Task{}, nil, nil, 1)
			if err == nil {
				t.Errorf("the run ended with outcome %+v, want it stopped (its task comes again)", out)
			}
			if trees, _ := clone.Output(t.Context(), "worktree", "list", "--porcelain"); strings.Count(trees, "worktree ") != 1 {
				t.Errorf("worktree left in the clone:\n%s", trees)
			}
			if b, _ := clone.Output(t.Context(), "branch", "--list", "runner-items/*"); b != "" {
				t.Errorf("item branch left in the clone: %s", b)
			}
			filepath.WalkDir(w.opts.StoreDir, func(p string, d fs.DirEntry, err error) error {
				if err == nil && p != w.opts.StoreDir {
					t.Errorf("file left in the worker's store: %s", p)
				}
				return nil
			})
		})
	}
}
