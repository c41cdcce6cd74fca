package natscoord

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/runnerdev/runner/internal/gitwork"
	"github.com/runnerdev/runner/internal/itemtask"
	"github.com/runnerdev/runner/internal/natsconn"
	"github.com/runnerdev/runner/internal/natstest"
	"github.com/runnerdev/runner/internal/state"
	"github.com/runnerdev/runner/internal/testkit"
	"github.com/runnerdev/runner/internal/workspace"
	"github.com/runnerdev/runner/workflow"
)

// gitFixture is a user's repository with a job branch one commit past
// main, and the coordinator's git side of the job on a server in this
// process.
type gitFixture struct {
	g          *gitSide
	w          *workspace.Worktrees
	git        gitwork.Git
	objs       *natsconn.Objects
	srv        *natstest.Server
	base, tip  string // main's commit and the job branch's
	itemBranch string
}

func newGitFixture(t *testing.T) *gitFixture {
	t.Helper()
	r := testkit.GitRepo(t, nil)
	r.Git("switch", "-q", "-c", "runner/j")
	r.Git("commit", "-q", "--allow-empty", "-m", "setup")
	r.Git("switch", "-q", "main")
	git := gitwork.Git{Dir: r.Dir, Env: append(os.Environ(), testkit.GitIdentity...)}
	srv := natstest.Start(t)
	js, err := jetstream.New(srv.Connect(t))
	if err != nil {
		t.Fatal(err)
	}
	objs, err := natsconn.OpenObjects(t.Context(), js, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	store, err := objs.GitStore(t.Context(), "k", true)
	if err != nil {
		t.Fatal(err)
	}
	refs := workspace.JobRefs{ID: "j", ItemBranches: "runner-items/j/", Target: "main", Repo: r.Dir}
	repo, err := workspace.OpenWorktrees(t.Context(), refs, &workflow.MapPhase{Isolation: workflow.IsolationWorktree}, git.Env, state.LayoutOf(t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	g := &gitSide{repo: repo, tmp: t.TempDir(), tips: map[string]bool{}, base: repo.Base(t.Context())}
	g.store.Store(&store)
	return &gitFixture{g: g, w: repo, git: git, objs: objs, srv: srv, base: g.base, tip: r.Git("rev-parse", "runner/j"), itemBranch: "runner-items/j/a"}
}

// item makes, in a clone of the repository, the item's branch from the
// job branch's tip with one commit, and returns the clone.
func (f *gitFixture) item(t *testing.T) gitwork.Git {
	t.Helper()
	clone := gitwork.Git{Dir: t.TempDir(), Env: f.git.Env}
	for _, args := range [][]string{
		{"clone", "-q", "--no-local", "-b", "runner/j", f.git.Dir, "."},
		{"switch", "-q", "-c", f.itemBranch},
		{"commit", "-q", "--allow-empty", "-m", "item a"},
	} {
		if _, err := clone.Output(t.Context(), args...); err != nil {
			t.Fatal(err)
		}
	}
	return clone
}

// put stores the bundle of the clone's item branch with the history base
// lacks as object name, its bytes changed by damage, and returns what a
// result says of the branch.
func (f *gitFixture) put(t *testing.T, clone gitwork.Git, base, name string, damage func([]byte) []byte) *natsconn.ItemGit {
	t.Helper()
	path := filepath.Join(t.TempDir(), "b")
	if err := clone.CreateBundle(t.Context(), path, "refs/heads/"+f.itemBranch, base); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.g.bucket().PutBytes(t.Context(), name, damage(data)); err != nil {
		t.Fatal(err)
	}
	head, err := clone.Tip(t.Context(), f.itemBranch)
	if err != nil {
		t.Fatal(err)
	}
	return &natsconn.ItemGit{Branch: f.itemBranch, Base: f.tip, Head: head, Bundle: name}
}

func same(data []byte) []byte { return data }

// moveTip commits on the job branch, as a merge would (under the job's
// merge lock), and returns its new tip.
func (f *gitFixture) moveTip(t *testing.T) string {
	t.Helper()
	tip, err := f.git.Tip(t.Context(), "runner/j")
	if err != nil {
		t.Fatal(err)
	}
	next, err := f.git.Output(t.Context(), "commit-tree", "-m", "next", "-p", tip, tip+"^{tree}")
	if err != nil {
		t.Fatal(err)
	}
	if err := f.git.SetRef(t.Context(), "refs/heads/runner/j", next); err != nil {
		t.Fatal(err)
	}
	// The job branch moves under the job's merge lock.
	unlock, err := f.w.Lock(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	unlock()
	return next
}

// A tip's bundle is stored once: thin against the commit the job started
// from, after that commit's full bundle, which is stored once per job.
func TestTipBundlesOncePerTip(t *testing.T) {
	f := newGitFixture(t)
	for range 2 {
		tip, err := f.g.tip(t.Context())
		if err != nil || tip != f.tip {
			t.Fatalf("tip = %s, %v; want %s", tip, err, f.tip)
		}
	}
	thin, err := f.g.bucket().GetInfo(t.Context(), natsconn.TipBundle(f.tip, true))
	if err != nil || thin.Metadata[natsconn.MetaBase] != f.base {
		t.Fatalf("thin bundle %+v, %v; want one naming base %s", thin, err, f.base)
	}
	if _, err := f.g.bucket().GetInfo(t.Context(), natsconn.TipBundle(f.base, false)); err != nil {
		t.Fatalf("the base's full bundle: %v", err)
	}
	next := f.moveTip(t)
	if tip, err := f.g.tip(t.Context()); err != nil || tip != next {
		t.Fatalf("tip = %s, %v; want %s", tip, err, next)
	}
	list, err := f.g.bucket().List(t.Context())
	if err != nil || len(list) != 3 {
		t.Errorf("objects %d, %v; want 3: the base's full bundle, a thin one per tip", len(list), err)
	}
	if refs, _ := f.git.Output(t.Context(), "for-each-ref", "refs/runner/"); refs != "" {
		t.Errorf("refs left in the user's repository: %s", refs)
	}
}

// A git bucket the server lost (restarted on an empty store) is made
// again with the bundles of the tips given (those of the tasks sent
// again) and of the commit the job started from; a bucket that is there
// is left as it is (issue 35.4: every worktree item failed as transfer,
// "bucket not found").
func TestGitBucketMadeAgain(t *testing.T) {
	f := newGitFixture(t)
	if _, err := f.g.tip(t.Context()); err != nil {
		t.Fatal(err)
	}
	if remade, err := f.g.keep(t.Context(), f.objs, "k", []string{f.tip}); remade || err != nil {
		t.Fatalf("keep of a bucket that is there: remade %v, %v; want nothing done", remade, err)
	}
	if err := f.objs.DeleteGitStore(t.Context(), "k"); err != nil {
		t.Fatal(err)
	}
	if remade, err := f.g.keep(t.Context(), f.objs, "k", []string{f.tip}); !remade || err != nil {
		t.Fatalf("keep of a lost bucket: remade %v, %v; want it made again", remade, err)
	}
	store, err := f.objs.GitStore(t.Context(), "k", false)
	if err != nil {
		t.Fatalf("the bucket: %v", err)
	}
	for _, name := range []string{natsconn.TipBundle(f.tip, true), natsconn.TipBundle(f.base, false)} {
		if _, err := store.GetInfo(t.Context(), name); err != nil {
			t.Errorf("bundle %s in the bucket made again: %v", name, err)
		}
	}
	next := f.moveTip(t)
	if tip, err := f.g.tip(t.Context()); err != nil || tip != next {
		t.Fatalf("tip = %s, %v; want %s", tip, err, next)
	}
	if _, err := store.GetInfo(t.Context(), natsconn.TipBundle(next, true)); err != nil {
		t.Errorf("the next tip's bundle, in the bucket made again: %v", err)
	}
}

// An item's bundle that starts from the tip it was given is fetched under
// its branch; one that does not verify, starts elsewhere or names a branch
// not of the job's items is the item's failure, kind transfer, and no
// branch is made.
func TestFetchItem(t *testing.T) {
	f := newGitFixture(t)
	clone := f.item(t)
	good := f.put(t, clone, f.tip, "item/good", same)
	corrupt := func(data []byte) []byte {
		i := bytes.Index(data, []byte("PACK"))
		data[i+20] ^= 0xff
		return data
	}
	otherBase := f.put(t, clone, f.base, "item/other-base", same)
	foreign := *good
	foreign.Branch = "main"
	for name, c := range map[string]struct {
		ig   *natsconn.ItemGit
		tip  string
		want string
	}{
		"corrupt":       {f.put(t, clone, f.tip, "item/corrupt", corrupt), f.tip, "item/corrupt"},
		"cut short":     {f.put(t, clone, f.tip, "item/short", func(d []byte) []byte { return d[:len(d)-40] }), f.tip, "item/short"},
		"bundle base":   {otherBase, f.tip, "not from the tip"},
		"given another": {good, f.base, "not from the tip"},
		"foreign":       {&foreign, f.tip, "not one of the job's items"},
		"not on job":    {&natsconn.ItemGit{Branch: f.itemBranch, Base: strings.Repeat("1", 40), Head: good.Head, Bundle: "item/good"}, "", strings.Repeat("1", 40)},
		"no commits":    {&natsconn.ItemGit{Branch: f.itemBranch, Base: f.tip, Head: good.Head}, f.tip, "sent no bundle"},
	} {
		t.Run(name, func(t *testing.T) {
			out := f.g.fetchItem(t.Context(), c.tip, natsconn.Result{Worker: "w1", Attempt: 2, Git: c.ig}, itemtask.Outcome{})
			if !out.Failed || out.Failure.Kind != itemtask.KindTransfer || out.Failure.Attempt != 2 || out.Branch != "" || !strings.Contains(out.Failure.Message, c.want) {
				t.Errorf("outcome %+v, want a transfer failure saying %q", out, c.want)
			}
			if head, _ := f.git.Tip(t.Context(), f.itemBranch); head != "" {
				t.Errorf("the item's branch was made at %s", head)
			}
		})
	}
	out := f.g.fetchItem(t.Context(), f.tip, natsconn.Result{Git: good}, itemtask.Outcome{})
	if out.Failed || out.Branch != f.itemBranch {
		t.Fatalf("outcome %+v, want the branch fetched", out)
	}
	if head, _ := f.git.Tip(t.Context(), f.itemBranch); head != good.Head {
		t.Fatalf("the item's branch is at %q, want %s", head, good.Head)
	}
}

// The server stops as the coordinator fetches an item's bundle, before
// the item's merge, and starts again on its store: the fetch is tried
// again and brings the item's branch back, and the item does not fail as
// transfer (issue 36: "the commits of worker w1 did not come back: bundle
// item/3...: context deadline exceeded" beside busy loops).
func TestFetchItemWhileServerRestarts(t *testing.T) {
	f := newGitFixture(t)
	ig := f.put(t, f.item(t), f.tip, "item/a", same)
	f.srv.Shutdown()
	restarted := make(chan error, 1)
	go func() {
		// Longer than a request waits for its answer (jetstream's
		// default timeout, 5 s): the first fetch fails.
		time.Sleep(7 * time.Second)
		restarted <- f.srv.Restart()
	}()
	out := f.g.fetchItem(t.Context(), f.tip, natsconn.Result{Worker: "w1", Attempt: 1, Git: ig}, itemtask.Outcome{})
	if err := <-restarted; err != nil {
		t.Fatal(err)
	}
	if out.Failed || out.Branch != f.itemBranch {
		t.Fatalf("outcome %+v, want the branch fetched once the server is back", out)
	}
	if head, _ := f.git.Tip(t.Context(), f.itemBranch); head != ig.Head {
		t.Errorf("the item's branch is at %q, want %s", head, ig.Head)
	}
}

// A job's git bucket goes when its dispatcher closes with its items done,
// and stays for its resume after an interrupt.
func TestGitBucketRemovedAtEnd(t *testing.T) {
	f := newGitFixture(t)
	if err := f.g.close(t.Context(), f.objs, "k", false); err != nil {
		t.Fatal(err)
	}
	if _, err := f.objs.GitStore(t.Context(), "k", false); err != nil {
		t.Fatalf("the bucket of an interrupted job is gone: %v", err)
	}
	if err := f.g.close(t.Context(), f.objs, "k", true); err != nil {
		t.Fatal(err)
	}
	if _, err := f.objs.GitStore(t.Context(), "k", false); err == nil {
		t.Fatal("the bucket of an ended job is still there")
	}
}
