package natsworker

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/runnerdev/runner/internal/itemtask"
	"github.com/runnerdev/runner/internal/natsconn"
)

// runItem runs task mt, of t, with its job's template. An item that runs
// in a worktree (t names the tip it starts from) first has that commit
// fetched into the worker's clone (itemtask.Opened.Git, in the job's copy
// in the worker's store) when the clone lacks it, and its branch goes
// back as a bundle in the job's git bucket, which the returned ItemGit
// names; the worker's copy of the branch, and whatever the run left of
// its worktree, are removed then, however the run ended. A tip or a
// branch that cannot be carried is the attempt's failure, kind transfer,
// unless the server did not answer or lost the bucket (unfinished). An
// error, and no outcome, means the run did not reach an end.
func (w *Worker) runItem(ctx context.Context, wj *workerJob, t natsconn.Task, mt itemtask.Task, sl itemtask.Slot, save func(itemtask.StepRecord) error, delivery int) (itemtask.Outcome, *natsconn.ItemGit, error) {
	if t.Tip == "" {
		out, err := wj.opened.Runner.Run(ctx, mt, sl, save)
		return out, nil, err
	}
	if err := w.fetchTip(ctx, wj, t.Tip); err != nil {
		if stop := unfinished(ctx, err); stop != nil {
			return itemtask.Outcome{}, nil, stop
		}
		return mt.FailedWith(itemtask.KindTransfer, fmt.Errorf("the job branch's tip %s did not reach worker %s: %w", t.Tip, w.opts.Name, err)), nil, nil
	}
	mt.Tip = t.Tip
	// Discarded not in ctx: its process group hook would have the
	// watchdog kill the git commands of a run whose lease ran out (a
	// server gone), as it killed those the run itself had running: the
	// discard clears what they left.
	defer func() {
		if err := wj.opened.Git.Discard(context.Background(), mt); err != nil {
			w.logf("removing the worktree and branch of item %s: %v", mt.ItemID, err)
		}
	}()
	out, err := wj.opened.Runner.Run(ctx, mt, sl, save)
	if out.Branch == "" || err != nil {
		return out, nil, err
	}
	ig, err := w.sendBranch(ctx, wj, t, delivery, out)
	if stop := unfinished(ctx, err); stop != nil {
		return itemtask.Outcome{}, nil, stop
	}
	if err != nil && !out.Failed {
		failed := mt.FailedWith(itemtask.KindTransfer, fmt.Errorf("the commits of branch %s did not leave worker %s: %w", out.Branch, w.opts.Name, err))
		out.Failed, out.Failure = true, failed.Failure
	}
	return out, ig, nil
}

// unfinished is why a run whose tip's fetch or branch's upload ended
// with err stops without an outcome: ctx's cause, or err when the server
// did not answer or lost the job's git bucket (restarted on an empty
// store: the coordinator makes it again and sends the task again). Nil:
// err, if any, is the item's failure.
func unfinished(ctx context.Context, err error) error {
	switch {
	case ctx.Err() != nil:
		return context.Cause(ctx)
	case err != nil && (natsconn.ServerAway(err) || natsconn.BucketLost(err)):
		return err // the task is delivered again
	}
	return nil
}

// fetchTip makes the worker's clone of the job of key hold commit tip:
// a clone that lacks it fetches it from the tip's thin bundle, after the
// full bundle of the thin bundle's base when it lacks that too, or from
// the tip's full bundle when there is no thin one. One fetch at a time:
// items of one tip wait for the first one's.
func (w *Worker) fetchTip(ctx context.Context, wj *workerJob, tip string) error {
	w.gitMu.Lock()
	defer w.gitMu.Unlock()
	clone := wj.opened.Git
	if clone.Has(ctx, tip) {
		return nil
	}
	store, err := w.objs.GitStore(ctx, wj.key, false)
	if err != nil {
		return err
	}
	thin, err := store.GetInfo(ctx, natsconn.TipBundle(tip, true))
	if err != nil {
		return w.fetchBundle(ctx, store, clone, natsconn.TipBundle(tip, false), tip)
	}
	if base := thin.Metadata[natsconn.MetaBase]; !clone.Has(ctx, base) {
		if err := w.fetchBundle(ctx, store, clone, natsconn.TipBundle(base, false), base); err != nil {
			return err
		}
	}
	return w.fetchBundle(ctx, store, clone, thin.Name, tip)
}

// fetchBundle fetches commit sha into clone from bundle object name.
func (w *Worker) fetchBundle(ctx context.Context, store jetstream.ObjectStore, clone itemtask.Clone, name, sha string) error {
	path, done, err := w.bundlePath()
	if err != nil {
		return err
	}
	defer done()
	if err := store.GetFile(ctx, name, path); err != nil {
		return fmt.Errorf("bundle %s: %w", name, err)
	}
	if err := clone.ImportTip(ctx, path, sha); err != nil {
		return fmt.Errorf("bundle %s: %w", name, err)
	}
	return nil
}

// sendBranch stores the commits the branch of out has since t's tip as a
// bundle in the job's git bucket, under the object of this delivery of
// t's attempt, and returns what the result says of the branch and the
// worktree it had (no bundle when it made no commit).
func (w *Worker) sendBranch(ctx context.Context, wj *workerJob, t natsconn.Task, delivery int, out itemtask.Outcome) (*natsconn.ItemGit, error) {
	path, done, err := w.bundlePath()
	if err != nil {
		return nil, err
	}
	defer done()
	head, err := wj.opened.Git.ExportItem(ctx, path, out.Branch, t.Tip)
	if err != nil {
		return nil, err
	}
	ig := &natsconn.ItemGit{Branch: out.Branch, Path: out.Worktree, Base: t.Tip, Head: head}
	if head == t.Tip {
		return ig, nil
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
