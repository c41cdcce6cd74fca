package natsworker

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/runnerdev/runner/internal/gitwork"
	"github.com/runnerdev/runner/internal/itemtask"
	"github.com/runnerdev/runner/internal/natsconn"
)

// runItem runs task mt, of t, with its job's template. An item that runs
// in a worktree (t names the tip it starts from) first has that commit
// fetched into the worker's clone (its --work-dir, or one it made for the
// job: itemtask.Opened.Repo) when the clone lacks it, and its branch goes
// back as a bundle in the job's git bucket, which the returned ItemGit
// names; the worker's copy of the branch, and whatever the run left of
// its worktree, are removed then, however the run ended. A tip or a
// branch that cannot be carried is the attempt's failure, kind transfer,
// unless the server did not answer or lost the bucket (carryLater). An
// error, and no outcome, means the run did not reach an end.
func (w *Worker) runItem(ctx context.Context, wj *workerJob, t natsconn.Task, mt itemtask.Task, sl itemtask.Slot, save func(itemtask.StepRecord) error, delivery int) (itemtask.Outcome, *natsconn.ItemGit, error) {
	if t.Tip == "" {
		out, err := wj.opened.Runner.Run(ctx, mt, sl, save)
		return out, nil, err
	}
	if err := w.fetchTip(ctx, wj, t.Tip); err != nil {
		if ctx.Err() != nil {
			return itemtask.Outcome{}, nil, context.Cause(ctx)
		}
		if carryLater(err) {
			return itemtask.Outcome{}, nil, err // the task is delivered again
		}
		return mt.FailedWith(itemtask.KindTransfer, fmt.Errorf("the job branch's tip %s did not reach worker %s: %w", t.Tip, w.opts.Name, err)), nil, nil
	}
	mt.Tip = t.Tip
	// Claimed before the run makes the branch, so that a worker killed at
	// any moment of it leaves a note of the branch. Discarded not in ctx:
	// its process group hook would have the watchdog kill the git
	// commands of a run whose lease ran out (a server gone), as it killed
	// those the run itself had running: the discard clears what they
	// left.
	defer w.claimBranch(wj.opened.Repo, wj.opened.Branch(mt))(func() error { return wj.opened.Discard(context.Background(), mt) })
	out, err := wj.opened.Runner.Run(ctx, mt, sl, save)
	if out.Branch == "" || err != nil {
		return out, nil, err
	}
	ig, err := w.sendBranch(ctx, wj, t, delivery, out)
	switch {
	case ctx.Err() != nil:
		return itemtask.Outcome{}, nil, context.Cause(ctx)
	case carryLater(err):
		return itemtask.Outcome{}, nil, err // the task is delivered again
	case err != nil && !out.Failed:
		failed := mt.FailedWith(itemtask.KindTransfer, fmt.Errorf("the commits of branch %s did not leave worker %s: %w", out.Branch, w.opts.Name, err))
		out.Failed, out.Failure = true, failed.Failure
	}
	return out, ig, nil
}

// carryLater reports whether err, of a tip's fetch or a branch's upload,
// says that the server did not answer or lost the job's git bucket
// (restarted on an empty store: the coordinator makes it again and sends
// the task again): the commits are carried on a later delivery, and the
// item does not fail.
func carryLater(err error) bool { return natsconn.ServerAway(err) || natsconn.BucketLost(err) }

// claimBranch notes in the worker's store that branch, in the clone at
// repo ("" this process's directory), is this worker's, from before its
// run makes it until it is sent: the next worker's sweep deletes the
// branch of a worker killed meanwhile (sweepStores). The returned
// function calls discard, which removes the branch with what the run left
// of its worktree, and then deletes the note.
func (w *Worker) claimBranch(repo, branch string) func(discard func() error) {
	abs, err := filepath.Abs(cmp.Or(repo, "."))
	var note *os.File
	if err == nil {
		note, err = os.CreateTemp(w.opts.StoreDir, claimPrefix)
	}
	if err == nil {
		_, err = note.WriteString(abs + "\n" + branch)
		note.Close()
	}
	return func(discard func() error) {
		if derr := discard(); derr != nil {
			w.logf("removing branch %s and its worktree: %v", branch, derr)
		}
		if err == nil {
			os.Remove(note.Name())
		}
	}
}

// claimedBranch is a branch a worker's store notes as its own
// (claimBranch), in the clone at repo.
type claimedBranch struct{ repo, branch string }

// claimedBranches are the branches a dead worker's store notes as its own.
func claimedBranches(store string) []claimedBranch {
	var out []claimedBranch
	notes, _ := filepath.Glob(filepath.Join(store, claimPrefix+"*"))
	for _, n := range notes {
		data, err := os.ReadFile(n)
		if repo, branch, ok := strings.Cut(string(data), "\n"); err == nil && ok {
			out = append(out, claimedBranch{repo, branch})
		}
	}
	return out
}

// deleteBranches deletes branches but those in keep, once their clones
// forgot the worktrees whose directories are gone (a dead worker's store
// took them) and deleted those worktrees' item branches, as
// forgetLeftWorktrees does: a plain git worktree prune would forget them
// with nothing left to say which branches they held (a store of a worker
// that noted its branches only once its runs ended). A branch still
// checked out, in a live worker's worktree, stays: git refuses.
func deleteBranches(branches []claimedBranch, keep map[claimedBranch]bool) {
	ctx := context.Background()
	pruned := map[string]bool{}
	for _, b := range branches {
		if keep[b] {
			continue
		}
		g := gitwork.Git{Dir: b.repo}
		if !pruned[b.repo] {
			pruned[b.repo] = true
			_ = g.PruneWithBranches(ctx, gitwork.ItemBranchesRoot)
		}
		_ = g.DeleteBranch(ctx, b.branch)
	}
}

// fetchTip makes the worker's clone hold commit tip of the job of key: a
// clone that lacks it fetches it from the tip's thin bundle, after the
// full bundle of the thin bundle's base when it lacks that too, or from
// the tip's full bundle when there is no thin one; each verified first,
// and fetched under a ref of its own (natsconn.TipRef). One fetch at a
// time: items of one tip wait for the first one's.
func (w *Worker) fetchTip(ctx context.Context, wj *workerJob, tip string) error {
	w.gitMu.Lock()
	defer w.gitMu.Unlock()
	git := gitwork.Git{Dir: wj.opened.Repo}
	if git.HasCommit(ctx, tip) {
		return nil
	}
	store, err := w.objs.GitStore(ctx, wj.key, false)
	if err != nil {
		return err
	}
	thin, err := store.GetInfo(ctx, natsconn.TipBundle(tip, true))
	if err != nil {
		return w.fetchBundle(ctx, store, git, wj.opened.Hold, natsconn.TipBundle(tip, false), tip)
	}
	if base := thin.Metadata[natsconn.MetaBase]; !git.HasCommit(ctx, base) {
		if err := w.fetchBundle(ctx, store, git, wj.opened.Hold, natsconn.TipBundle(base, false), base); err != nil {
			return err
		}
	}
	return w.fetchBundle(ctx, store, git, wj.opened.Hold, thin.Name, tip)
}

// fetchBundle fetches commit sha into the clone git runs in from bundle
// object name, verified first, under hold (the clone's worktree lock).
func (w *Worker) fetchBundle(ctx context.Context, store jetstream.ObjectStore, git gitwork.Git, hold func(func() error) error, name, sha string) error {
	path, done, err := w.bundlePath()
	if err != nil {
		return err
	}
	defer done()
	if err := store.GetFile(ctx, name, path); err != nil {
		return fmt.Errorf("bundle %s: %w", name, err)
	}
	// Not while an item's worktree is made or removed in the clone.
	if err := itemtask.Held(hold, func() error { return git.FetchBundle(ctx, path, natsconn.TipRef(sha), natsconn.TipRef(sha)) }); err != nil {
		return fmt.Errorf("bundle %s: %w", name, err)
	}
	if !git.HasCommit(ctx, sha) {
		return fmt.Errorf("bundle %s does not hold %s", name, sha)
	}
	return nil
}

// sendBranch stores the commits the branch of out has since t's tip as a
// bundle in the job's git bucket, under the object of this delivery of
// t's attempt, and returns what the result says of the branch and the
// worktree it had (no bundle when it made no commit).
func (w *Worker) sendBranch(ctx context.Context, wj *workerJob, t natsconn.Task, delivery int, out itemtask.Outcome) (*natsconn.ItemGit, error) {
	branch := out.Branch
	git := gitwork.Git{Dir: wj.opened.Repo}
	head, err := git.Tip(ctx, branch)
	if err != nil {
		return nil, err
	}
	ig := &natsconn.ItemGit{Branch: branch, Path: out.Worktree, Base: t.Tip, Head: head}
	if head == t.Tip {
		return ig, nil
	}
	path, done, err := w.bundlePath()
	if err != nil {
		return nil, err
	}
	defer done()
	if err := git.CreateBundle(ctx, path, "refs/heads/"+branch, t.Tip); err != nil {
		return nil, err
	}
	store, err := w.objs.GitStore(ctx, wj.key, false)
	if err != nil {
		return nil, err
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	ig.Bundle = natsconn.ItemBundle(t.Index, t.Attempt, t.Epoch, delivery, head)
	if _, err := store.Put(ctx, jetstream.ObjectMeta{Name: ig.Bundle}, &chunkCrashReader{r: f}); err != nil {
		return nil, err
	}
	return ig, nil
}

// bundlePath is the path of a bundle in a new directory of the worker's
// store; done removes the directory with whatever is in it: the bundle,
// and the lock file (path.lock) of a git bundle create killed midway (the
// run cut off from its server).
func (w *Worker) bundlePath() (path string, done func(), err error) {
	dir, err := os.MkdirTemp(w.opts.StoreDir, "bundle-")
	if err != nil {
		return "", nil, err
	}
	return filepath.Join(dir, "bundle"), func() { os.RemoveAll(dir) }, nil
}

// forgetLeftWorktrees makes the worker's clone (its --work-dir, when that
// is in a git repository) forget the items' worktrees whose directories
// are gone, and delete their item branches: those of a worker killed
// with -9, whose store the next worker's sweep removed (NewStore). Their
// items ran again, here or on another worker, on branches of their own.
func forgetLeftWorktrees(ctx context.Context) {
	_ = gitwork.Git{}.PruneWithBranches(ctx, gitwork.ItemBranchesRoot) // not a repository: nothing to forget
}
