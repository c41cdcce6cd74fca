package natscoord

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/runnerdev/runner/internal/gitwork"
	"github.com/runnerdev/runner/internal/itemtask"
	"github.com/runnerdev/runner/internal/natsconn"
)

// gitSide carries the commits of a job whose items run in worktrees
// between the user's repository (this process's directory) and the
// workers, through the job's git bucket: the job branch's tips out (a
// bundle per tip, made once: thin against the commit the job started
// from, whose full bundle is made once per job), the items' branches
// back.
type gitSide struct {
	repo itemtask.Repo
	git  gitwork.Git // in the user's checkout
	base string      // the commit the job started from, which workers' clones likely have; "" unknown
	tmp  string      // where bundles are written and read

	mu   sync.Mutex      // one tip's bundles made at a time
	tips map[string]bool // the tip bundles stored, by object
	last tipRead         // the job branch's tip as last read, its bundles stored

	storeMu sync.Mutex
	store   jetstream.ObjectStore // the job's git bucket, made again by keep
}

// tipRead is the job branch's tip read when the job's process had moved
// it moves times (itemtask.Repo.Moves).
type tipRead struct {
	sha   string
	moves uint64
}

// openGit readies the git bucket of d's job when its items run in
// worktrees (else it returns nil).
func openGit(ctx context.Context, d *Dispatcher) (*gitSide, error) {
	repo := d.j.Repo()
	if repo.JobBranch == "" {
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
	g := &gitSide{repo: repo, git: gitwork.Git{Env: repo.Env}, store: store, tmp: tmp, tips: map[string]bool{}}
	if repo.Target != "" {
		// Where the job branch left the branch it started on: a clone of
		// the repository made before the job has it.
		g.base, _ = g.git.Output(ctx, "merge-base", "refs/heads/"+repo.Target, "refs/heads/"+repo.JobBranch)
	}
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
// the attempt's failed outcome, when the tip cannot be read or stored.
func (d *Dispatcher) withTip(ctx context.Context, t *itemtask.Task) (itemtask.Outcome, bool) {
	if d.git == nil || d.fromEndedProcess(t.Index, t.Attempt) {
		return itemtask.Outcome{}, true
	}
	tip, err := d.git.tip(ctx)
	if err != nil {
		return t.FailedWith(itemtask.KindTransfer, err), false
	}
	t.Tip = tip
	return itemtask.Outcome{}, true
}

// awayWait is how long storing a tip's bundles, or fetching an item's,
// is tried again while the server does not answer (restarting) before the
// item fails.
const awayWait = 2 * time.Minute

// whileAway calls do, and again each second while the server does not
// answer (natsconn.ServerAway), for at most awayWait or until ctx ends;
// it returns do's last error.
func whileAway(ctx context.Context, do func() error) error {
	err := do()
	for until := time.Now().Add(awayWait); natsconn.ServerAway(err) && ctx.Err() == nil && time.Now().Before(until); {
		time.Sleep(time.Second)
		err = do()
	}
	return err
}

// tip returns the job branch's tip, whose bundle it stores first. The
// tip is read again only once the job's process may have moved the job
// branch.
func (g *gitSide) tip(ctx context.Context) (string, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.repo.Moves == nil {
		return g.readTip(ctx)
	}
	moves := g.repo.Moves()
	if g.last.sha != "" && g.last.moves == moves {
		return g.last.sha, nil
	}
	sha, err := g.readTip(ctx)
	if err == nil {
		g.last = tipRead{sha: sha, moves: moves}
	}
	return sha, err
}

// readTip reads the job branch's tip and stores its bundle.
func (g *gitSide) readTip(ctx context.Context) (string, error) {
	sha, err := g.git.Tip(ctx, g.repo.JobBranch)
	if err == nil && sha == "" {
		err = fmt.Errorf("the job branch %s is gone", g.repo.JobBranch)
	}
	if err == nil {
		err = whileAway(ctx, func() error { return g.storeTip(ctx, sha, g.base) })
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
// base lacks (all of it for ""), which holds sha under a ref of its own
// (natsconn.TipRef), made for it and removed after.
func (g *gitSide) putBundle(ctx context.Context, name, sha, base string) error {
	ref := natsconn.TipRef(sha)
	if err := g.git.SetRef(ctx, ref, sha); err != nil {
		return err
	}
	defer g.git.DeleteRef(context.WithoutCancel(ctx), ref)
	path := filepath.Join(g.tmp, strings.ReplaceAll(name, "/", "_"))
	defer os.Remove(path)
	if err := g.git.CreateBundle(ctx, path, ref, base); err != nil {
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
	err := whileAway(ctx, func() error { return g.fetch(ctx, tip, r.Git) })
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

// fetch checks what the worker says of the item's branch and fetches its
// commits into the user's repository under the branch's name: from its
// bundle, which must verify, start from the tip given and hold the head
// the worker names.
func (g *gitSide) fetch(ctx context.Context, tip string, ig *natsconn.ItemGit) error {
	if ig == nil {
		return errors.New("the worker's result names no branch")
	}
	if err := g.checkBase(ctx, tip, ig); err != nil {
		return err
	}
	ref := "refs/heads/" + ig.Branch
	if ig.Bundle == "" {
		if ig.Head != ig.Base {
			return fmt.Errorf("its branch %s is at %s, not at %s, and it sent no bundle", ig.Branch, ig.Head, ig.Base)
		}
		return g.git.SetRef(ctx, ref, ig.Head)
	}
	path := filepath.Join(g.tmp, strings.ReplaceAll(ig.Bundle, "/", "_"))
	defer os.Remove(path)
	if err := g.bucket().GetFile(ctx, ig.Bundle, path); err != nil {
		return fmt.Errorf("bundle %s: %w", ig.Bundle, err)
	}
	b, err := gitwork.ReadBundle(path)
	if err != nil {
		return err
	}
	if !slices.Equal(b.Prerequisites, []string{ig.Base}) {
		return fmt.Errorf("bundle %s starts from %s, not from the tip %s the item was given", ig.Bundle, strings.Join(b.Prerequisites, ", "), ig.Base)
	}
	if b.Heads[ref] != ig.Head {
		return fmt.Errorf("bundle %s does not hold %s at %s", ig.Bundle, ref, ig.Head)
	}
	if err := itemtask.Held(g.repo.Hold, func() error { return g.git.FetchBundle(ctx, path, ref, ref) }); err != nil {
		return fmt.Errorf("bundle %s: %w", ig.Bundle, err)
	}
	return nil
}

// checkBase refuses a branch the job does not own or that does not start
// from the tip the item was given.
func (g *gitSide) checkBase(ctx context.Context, tip string, ig *natsconn.ItemGit) error {
	if !strings.HasPrefix(ig.Branch, g.repo.ItemBranches) {
		return fmt.Errorf("its branch %q is not one of the job's items (%s*)", ig.Branch, g.repo.ItemBranches)
	}
	if err := g.git.CheckBranchName(ctx, ig.Branch); err != nil {
		return err
	}
	if tip != "" {
		if ig.Base != tip {
			return fmt.Errorf("its branch starts from %s, not from the tip %s it was given", ig.Base, tip)
		}
		return nil
	}
	on, err := g.git.Contains(ctx, g.repo.JobBranch, ig.Base)
	if err == nil && !on {
		err = fmt.Errorf("its branch starts from %s, which is not on the job branch", ig.Base)
	}
	return err
}

// bucket is the job's git bucket as the coordinator has it now.
func (g *gitSide) bucket() jetstream.ObjectStore {
	g.storeMu.Lock()
	defer g.storeMu.Unlock()
	return g.store
}

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
	g.storeMu.Lock()
	g.store = store
	g.storeMu.Unlock()
	g.tips, g.last = map[string]bool{}, tipRead{}
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
