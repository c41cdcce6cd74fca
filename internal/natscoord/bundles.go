package natscoord

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/runnerdev/runner/internal/itemtask"
	"github.com/runnerdev/runner/internal/natsconn"
)

// gitSide carries the commits of a job whose items run in worktrees
// between the user's repository (the job's itemtask.Repo) and the
// workers, through the job's git bucket: the job branch's tips out (a
// bundle per tip, made once: thin against the commit the job started
// from, whose full bundle is made once per job), the items' branches
// back.
type gitSide struct {
	repo itemtask.Repo
	base string // the commit the job started from, which workers' clones likely have; "" unknown
	tmp  string // where bundles are written and read

	mu    sync.Mutex                            // one tip's bundles made at a time
	tips  map[string]bool                       // the tip bundles stored, by object
	store atomic.Pointer[jetstream.ObjectStore] // the job's git bucket, made again by keep
}

// openGit readies the git bucket of d's job when its items run in
// worktrees (else it returns nil).
func openGit(ctx context.Context, d *Dispatcher) (*gitSide, error) {
	repo := d.j.Repo()
	if repo == nil {
		return nil, nil
	}
	store, err := d.objs.GitStore(ctx, d.key, true)
	if err != nil {
		return nil, err
	}
	tmp, err := bundlesDir(d.key)
	if err != nil {
		return nil, err
	}
	g := &gitSide{repo: repo, base: repo.Base(ctx), tmp: tmp, tips: map[string]bool{}}
	g.store.Store(&store)
	return g, nil
}

// bundlesDir makes the temporary directory of the bundles of the job of
// key, after removing those a killed coordinator of the job left (the
// job's lock lets one coordinator run it at a time).
func bundlesDir(key string) (string, error) {
	prefix := "runner-bundles-" + key + "-"
	left, _ := filepath.Glob(filepath.Join(os.TempDir(), prefix+"*"))
	for _, dir := range left {
		os.RemoveAll(dir)
	}
	return os.MkdirTemp("", prefix)
}

// withTip names in t the job branch's tip its item's worktree starts
// from, with that tip's bundles stored, unless its result or task is
// from an ended process (adopted: it has its own). It reports false, with
// the attempt's failed outcome, when the tip cannot be read or stored,
// kind transfer, or when git could not make the item's branch in the
// user's repository, where the branch comes back with the item's
// commits: a ref in its way (an old job's branch), kind worktree, with
// the message a run in this process gives.
func (d *Dispatcher) withTip(ctx context.Context, t *itemtask.Task) (itemtask.Outcome, bool) {
	if d.git == nil || d.fromEndedProcess(t.Index, t.Attempt) {
		return itemtask.Outcome{}, true
	}
	tip, err := d.git.tip(ctx)
	if err != nil {
		return t.FailedWith(itemtask.KindTransfer, err), false
	}
	t.Tip = tip
	// Interrupted, the check fails with ctx: the dispatch's wait says so.
	if err := d.git.repo.CheckItemBranch(ctx, t.Index, t.ItemID, tip); err != nil && ctx.Err() == nil {
		return t.FailedWith(itemtask.KindWorktree, err), false
	}
	return itemtask.Outcome{}, true
}

// awayWait is how long storing a tip's bundles, or fetching an item's,
// is tried again while the server does not answer (restarting) before the
// item fails.
const awayWait = 2 * time.Minute

// whileAway is what storing or fetching bundles tries again: the server
// not answering (natsconn.ServerAway), for at most awayWait.
func whileAway() func(error) bool { return natsconn.Within(awayWait, natsconn.ServerAway) }

// tip returns the job branch's tip, whose bundles it stores first.
func (g *gitSide) tip(ctx context.Context) (string, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	sha, err := g.repo.Tip(ctx)
	if err == nil {
		err = natsconn.Retry(ctx, whileAway(), func() error { return g.storeTip(ctx, sha, g.base) })
	}
	if err != nil {
		return "", fmt.Errorf("storing the job branch's tip %s for the workers: %w", sha, err)
	}
	return sha, nil
}

// storeTip stores, once, the bundle workers fetch commit sha from: thin
// against base when base is set and is not sha (after the full bundle of
// base, which a clone without base fetches first: the history before
// the job travels once per job, not once per tip), else full.
func (g *gitSide) storeTip(ctx context.Context, sha, base string) error {
	thin := base != "" && base != sha
	name := natsconn.TipBundle(sha, thin)
	if g.tips[name] {
		return nil
	}
	cctx, cancel := context.WithTimeout(ctx, natsconn.CallDeadline)
	_, err := g.bucket().GetInfo(cctx, name)
	cancel()
	if errors.Is(err, jetstream.ErrObjectNotFound) {
		if thin {
			if err := g.storeTip(ctx, base, ""); err != nil {
				return err
			}
		} else {
			base = ""
		}
		err = g.putBundle(ctx, name, sha, base)
	}
	if err != nil {
		return err
	}
	g.tips[name] = true
	return nil
}

// putBundle stores as object name a bundle of commit sha with the history
// base lacks (all of it for "").
func (g *gitSide) putBundle(ctx context.Context, name, sha, base string) error {
	path := filepath.Join(g.tmp, strings.ReplaceAll(name, "/", "_"))
	defer os.Remove(path)
	if err := g.repo.ExportTip(ctx, path, sha, base); err != nil {
		return err
	}
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	meta := jetstream.ObjectMeta{Name: name}
	if base != "" {
		meta.Metadata = map[string]string{natsconn.MetaBase: base}
	}
	_, err = g.bucket().Put(ctx, meta, f)
	return err
}

// fetchItem brings back the branch of an item whose result is r, started
// from tip ("" for an attempt an ended process sent, whose tip is not
// known: then the one the worker names must be on the job branch), and
// sets out's branch, trying again while the server does not answer (a
// server restarting); the item's commits stay on a worker when it fails,
// with kind transfer, unless the attempt had failed already.
func (g *gitSide) fetchItem(ctx context.Context, tip string, r natsconn.Result, out itemtask.Outcome) itemtask.Outcome {
	if r.Git == nil && r.Failed {
		return out // it failed before its worktree was made
	}
	err := natsconn.Retry(ctx, whileAway(), func() error { return g.fetch(ctx, tip, r.Git) })
	switch {
	case err == nil:
		out.Branch, out.Worktree = r.Git.Branch, r.Git.Path
	case !out.Failed:
		out.Failed, out.Failure = true, itemtask.Failure{
			Attempt: r.Attempt, At: time.Now(), Kind: itemtask.KindTransfer, ExitCode: -1, Duration: out.Duration,
			Message: fmt.Sprintf("the commits of worker %s did not come back: %v", r.Worker, err),
		}
	}
	return out
}

// fetch fetches the item's commits into the user's repository under the
// branch's name, from its bundle in the job's bucket, checked
// (itemtask.Repo.ImportItem).
func (g *gitSide) fetch(ctx context.Context, tip string, ig *natsconn.ItemGit) error {
	if ig == nil {
		return errors.New("the worker's result names no branch")
	}
	b := itemtask.ItemBranch{Name: ig.Branch, Base: ig.Base, Head: ig.Head}
	if ig.Bundle == "" {
		return g.repo.ImportItem(ctx, "", b, tip)
	}
	path := filepath.Join(g.tmp, strings.ReplaceAll(ig.Bundle, "/", "_"))
	defer os.Remove(path)
	if err := g.bucket().GetFile(ctx, ig.Bundle, path); err != nil {
		return fmt.Errorf("bundle %s: %w", ig.Bundle, err)
	}
	if err := g.repo.ImportItem(ctx, path, b, tip); err != nil {
		return fmt.Errorf("bundle %s: %w", ig.Bundle, err)
	}
	return nil
}

// bucket is the job's git bucket as the coordinator has it now.
func (g *gitSide) bucket() jetstream.ObjectStore { return *g.store.Load() }

// keep makes the job's git bucket of key again when the server lost it
// (restarted on an empty store), with the bundles of tips (those the
// tasks out name, sent again after this) and of the commit the job
// started from; the next tip read is stored again too. It reports
// whether it made the bucket again.
func (g *gitSide) keep(ctx context.Context, objs *natsconn.Objects, key string, tips []string) (remade bool, err error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	cctx, cancel := context.WithTimeout(ctx, natsconn.CallDeadline)
	_, err = g.bucket().Status(cctx)
	cancel()
	if !natsconn.BucketLost(err) {
		return false, err
	}
	store, err := objs.GitStore(ctx, key, true)
	if err != nil {
		return true, err
	}
	g.store.Store(&store)
	g.tips = map[string]bool{}
	for _, tip := range tips {
		if err := g.storeTip(ctx, tip, g.base); err != nil {
			return true, fmt.Errorf("storing the job branch's tip %s for the workers: %w", tip, err)
		}
	}
	return true, nil
}

// close removes the bundles' directory and, when the job's items are all
// done (remove), its git bucket.
func (g *gitSide) close(ctx context.Context, objs *natsconn.Objects, key string, remove bool) error {
	os.RemoveAll(g.tmp)
	if !remove {
		return nil
	}
	return objs.DeleteGitStore(ctx, key)
}
