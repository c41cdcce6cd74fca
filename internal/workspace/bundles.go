package workspace

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/runnerdev/runner/internal/gitwork"
	"github.com/runnerdev/runner/internal/items"
	"github.com/runnerdev/runner/internal/itemtask"
)

// The bundles that carry commits between the job's process and the NATS
// workers' clones (map.isolation: worktree): the job branch's tips out
// (ExportTip, ImportTip), each held in its bundle under a ref of its own,
// and the items' branches back (ExportItem, ImportItem). Where a bundle
// travels is the caller's.

var (
	_ itemtask.Repo  = (*Worktrees)(nil)
	_ itemtask.Clone = (*Worktrees)(nil)
)

// tipRef is the ref a tip bundle holds tip sha under, and the ref a
// worker's clone keeps it under once fetched.
func tipRef(sha string) string { return "refs/runner/tips/" + sha }

// Tip returns the job branch's tip, read again only once this process
// may have moved the job branch since it last read it (JobBranchMoves).
func (w *Worktrees) Tip(ctx context.Context) (string, error) {
	w.tipMu.Lock()
	defer w.tipMu.Unlock()
	moves := w.JobBranchMoves()
	if w.tip != "" && w.tipMoves == moves {
		return w.tip, nil
	}
	sha, err := w.jobTip(ctx)
	if err != nil {
		return "", err
	}
	w.tip, w.tipMoves = sha, moves
	return sha, nil
}

// Base is where the job branch left the branch the job started on, which
// a clone of the repository made before the job has: "" when HEAD was
// detached or git cannot say.
func (w *Worktrees) Base(ctx context.Context) string {
	if w.target == "" {
		return ""
	}
	base, _ := w.User.Output(ctx, "merge-base", "refs/heads/"+w.target, "refs/heads/"+w.JobBranch)
	return base
}

// ExportTip writes to path a bundle of commit sha with the history base
// lacks (all of it for ""), sha under a ref of its own (tipRef), made for
// it and removed after.
func (w *Worktrees) ExportTip(ctx context.Context, path, sha, base string) error {
	ref := tipRef(sha)
	if err := w.User.SetRef(ctx, ref, sha); err != nil {
		return err
	}
	defer w.User.DeleteRef(context.WithoutCancel(ctx), ref)
	return w.User.CreateBundle(ctx, path, ref, base)
}

// ImportItem fetches into the repository, under the branch's name, the
// branch of an item that ran elsewhere, b, from the bundle at path ("":
// none, the branch made no commit): the branch must be one of the job's
// items', start from tip, the one the item was given ("" for an attempt
// an ended process sent, whose tip is not known: then from a commit on
// the job branch), and the bundle verify, start from b.Base and hold
// b.Head. The fetch holds the worktree lock: it reads every ref.
func (w *Worktrees) ImportItem(ctx context.Context, path string, b itemtask.ItemBranch, tip string) error {
	if err := w.checkBase(ctx, b, tip); err != nil {
		return err
	}
	ref := "refs/heads/" + b.Name
	if path == "" {
		if b.Head != b.Base {
			return fmt.Errorf("its branch %s is at %s, not at %s, and it sent no bundle", b.Name, b.Head, b.Base)
		}
		return w.User.SetRef(ctx, ref, b.Head)
	}
	h, err := gitwork.ReadBundle(path)
	if err != nil {
		return err
	}
	if !slices.Equal(h.Prerequisites, []string{b.Base}) {
		return fmt.Errorf("it starts from %s, not from the tip %s the item was given", strings.Join(h.Prerequisites, ", "), b.Base)
	}
	if h.Heads[ref] != b.Head {
		return fmt.Errorf("it does not hold %s at %s", ref, b.Head)
	}
	return w.Admin(func() error { return w.User.FetchBundle(ctx, path, ref, ref) })
}

// checkBase refuses a branch the job does not own or that does not start
// from the tip the item was given.
func (w *Worktrees) checkBase(ctx context.Context, b itemtask.ItemBranch, tip string) error {
	if !strings.HasPrefix(b.Name, w.itemBranches) {
		return fmt.Errorf("its branch %q is not one of the job's items (%s*)", b.Name, w.itemBranches)
	}
	if err := w.User.CheckBranchName(ctx, b.Name); err != nil {
		return err
	}
	if tip != "" {
		if b.Base != tip {
			return fmt.Errorf("its branch starts from %s, not from the tip %s it was given", b.Base, tip)
		}
		return nil
	}
	on, err := w.User.Contains(ctx, w.JobBranch, b.Base)
	if err == nil && !on {
		err = fmt.Errorf("its branch starts from %s, which is not on the job branch", b.Base)
	}
	return err
}

// CheckItemBranch fails as Acquire would, kind itemtask.KindWorktree, when git
// could not make the branch of item (index, id) at commit at: a ref in
// its way. Nothing is made.
func (w *Worktrees) CheckItemBranch(ctx context.Context, index int, id, at string) error {
	it := &items.Item{Index: index, ID: id}
	if err := w.User.CanMakeBranch(ctx, w.TreeOf(it).Branch, at); err != nil {
		return worktreeFailed(it, err)
	}
	return nil
}

// Has reports whether the repository has commit sha.
func (w *Worktrees) Has(ctx context.Context, sha string) bool { return w.User.HasCommit(ctx, sha) }

// ImportTip fetches commit sha from the tip bundle at path (ExportTip's)
// under its ref, verified first, holding the worktree lock (not while an
// item's worktree is made or removed: the fetch reads every worktree's
// HEAD, which one half made breaks).
func (w *Worktrees) ImportTip(ctx context.Context, path, sha string) error {
	if err := w.Admin(func() error { return w.User.FetchBundle(ctx, path, tipRef(sha), tipRef(sha)) }); err != nil {
		return err
	}
	if !w.User.HasCommit(ctx, sha) {
		return errors.New("it does not hold " + sha)
	}
	return nil
}

// ExportItem writes to path a bundle of the commits branch has since
// base, and returns the branch's head; when the head is base, there is
// nothing to carry and no bundle.
func (w *Worktrees) ExportItem(ctx context.Context, path, branch, base string) (head string, err error) {
	head, err = w.User.Tip(ctx, branch)
	if err != nil || head == base {
		return head, err
	}
	return head, w.User.CreateBundle(ctx, path, "refs/heads/"+branch, base)
}
