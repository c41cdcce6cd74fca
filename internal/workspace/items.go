package workspace

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/runnerdev/runner/internal/crashpoint"
	"github.com/runnerdev/runner/internal/gitwork"
	"github.com/runnerdev/runner/internal/items"
	"github.com/runnerdev/runner/internal/itemtask"
	"github.com/runnerdev/runner/internal/state"
	"github.com/runnerdev/runner/workflow"
)

// KindMergeConflict is the failure kind of an item whose branch could not
// be merged into the job branch without conflicts.
const KindMergeConflict = "merge_conflict"

// Worktrees are the git worktrees and branches of a job whose map runs
// with isolation: worktree. The job worktree, on the job branch, is where
// setup, the merges and reduce run; each item runs in a worktree of its
// own on a branch made from the job branch's tip, merged back (one merge
// at a time, under the job's merge lock) when the item succeeds.
type Worktrees struct {
	*Tree
	itemsDir     string // where the items' worktrees are made
	itemBranches string // the items' branches' prefix, ending in a slash
	merge        bool   // map.merge is not none
	target       string // the branch the job started on; "" when HEAD was detached

	tipMu    sync.Mutex
	tip      string // the job branch's tip as Tip last read it,
	tipMoves uint64 // when this process had moved it tipMoves times
}

// ItemBranches is the prefix of the item branches of job id, when its map
// runs with isolation: worktree (else ""), as the job's metadata records
// it: runner-items/<id>/, a namespace of its own, so that no job's item
// branch is in the way of another job's branch (runner/<id>).
func ItemBranches(m *workflow.MapPhase, id string) string {
	if m == nil || m.Isolation != workflow.IsolationWorktree {
		return ""
	}
	return "runner-items/" + id + "/"
}

// JobRefs is what Open and OpenWorktrees need of a job: its id and the
// prefix of its item branches that its metadata records ("" for a job
// recorded before it did).
type JobRefs struct {
	ID           string
	ItemBranches string
	Target       string // the branch the job started on (Base); "" when HEAD was detached
	// Repo is the directory of the repository the items' worktrees are
	// made in: "" for this process's (a NATS worker's may be one it made,
	// WorkerRepo).
	Repo string
}

// OpenWorktrees returns the worktrees of a job (nil when its map runs
// without isolation): the job worktree as Open returns it, and its items'.
func OpenWorktrees(ctx context.Context, refs JobRefs, m *workflow.MapPhase, env []string, layout state.Layout) (*Worktrees, error) {
	if m == nil || m.Isolation != workflow.IsolationWorktree {
		return nil, nil
	}
	tree, err := Open(ctx, refs, env, layout)
	if err != nil {
		return nil, fmt.Errorf("map.isolation: worktree: %w", err)
	}
	itemsDir, err := filepath.Abs(layout.ItemWorktrees)
	if err != nil {
		return nil, err
	}
	return &Worktrees{Tree: tree, itemsDir: itemsDir, itemBranches: refs.ItemPrefix(), merge: !m.NoMerge, target: refs.Target}, nil
}

// ItemPrefix is the prefix of the job's item branches: the one its
// metadata records, else that of a job recorded before ItemBranches,
// runner/<id>.items/ (in the way of job <id>.items's branch).
func (r JobRefs) ItemPrefix() string { return cmp.Or(r.ItemBranches, Branch(r.ID)+".items/") }

// ResumeJob readies the worktrees of a resumed job: the items' worktrees
// a process that died left are removed, and the job worktree is made
// again on the job branch or, if it is still there, has a merge that the
// dead process left half done aborted (Ready).
func (w *Worktrees) ResumeJob(ctx context.Context) error {
	if err := w.removeItemTrees(ctx); err != nil {
		return err
	}
	return w.Ready(ctx)
}

// StartRetry readies the worktrees for a dlq retry of its: the items'
// worktrees that a killed retry left are removed (no other retry of the
// job runs: the DLQ is held). It returns, by index, the items of its whose
// branch a killed retry merged, with the outcome to record: they are
// neither run nor merged again. The job worktree is made at the first
// merge, under the job's merge lock.
func (w *Worktrees) StartRetry(ctx context.Context, its []*items.Item) (map[int]itemtask.Outcome, error) {
	if err := w.removeItemTrees(ctx); err != nil {
		return nil, err
	}
	return w.MergedItems(ctx, its)
}

// EndRetry removes the job worktree that the retry's merges made. Another
// retry that merges later makes it again.
func (w *Worktrees) EndRetry(ctx context.Context) error {
	ctx = context.WithoutCancel(ctx) // an interrupted retry still cleans up
	unlock, err := w.Lock(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	if err := w.Remove(ctx); err != nil {
		return fmt.Errorf("removing the job worktree: %w", err)
	}
	crashpoint.Hit(crashpoint.JobWorktreeRemoved)
	return w.deleteMergedBranches(ctx)
}

// EndJob removes every worktree of the job (the items' an interrupted run
// left, and the job's own); the branches stay.
func (w *Worktrees) EndJob(ctx context.Context) error {
	ctx = context.WithoutCancel(ctx) // an interrupted job still cleans up
	err := w.removeItemTrees(ctx)
	if err == nil {
		crashpoint.Hit(crashpoint.ItemWorktreesRemoved)
	}
	if err := errors.Join(err, w.Remove(ctx)); err != nil {
		return fmt.Errorf("removing the job's worktrees: %w", err)
	}
	crashpoint.Hit(crashpoint.JobWorktreeRemoved)
	return w.deleteMergedBranches(ctx)
}

// deleteMergedBranches deletes the items' branches that hold nothing the
// job branch lacks, which recorded deletes one by one: those a process
// killed between recording an item and deleting its branch left, or a
// delete that failed. A branch checked out in a worktree (an item of
// another dlq retry running) is not deleted: git refuses, and it is left
// to the process running it. map.merge: none keeps every branch.
func (w *Worktrees) deleteMergedBranches(ctx context.Context) error {
	if !w.merge {
		return nil
	}
	branches, err := w.User.MergedBranches(ctx, w.JobBranch, w.itemBranches+"*")
	if err != nil {
		return fmt.Errorf("listing the items' merged branches: %w", err)
	}
	for _, b := range branches {
		_ = w.User.DeleteBranch(ctx, b)
	}
	return nil
}

// removeItemTrees removes the items' worktrees that are there.
func (w *Worktrees) removeItemTrees(ctx context.Context) error {
	return w.Admin(func() error { return w.User.ClearWorktree(ctx, w.itemsDir) })
}

// MergedItems returns, by index, the items among its that the job branch
// has a merge of, with the outcome to record for each: they succeeded,
// whatever a process that died after the merge recorded or did not (a
// failure or the DLQ included). An item's merge is the one whose message
// names it ("Merge <id> (runner job <job>)"), or that merged its branch's
// tip.
func (w *Worktrees) MergedItems(ctx context.Context, its []*items.Item) (map[int]itemtask.Outcome, error) {
	repo := w.User
	merges, err := repo.Merges(ctx, w.JobBranch)
	if err != nil {
		return nil, err
	}
	byItem, byTip := map[string]gitwork.MergeCommit{}, map[string]gitwork.MergeCommit{}
	for _, m := range merges { // newest first: an item's first merge is kept
		if id, ok := itemOfMerge(m.Message, w.JobID); ok {
			byItem[id] = m
		}
		for _, p := range m.Parents[1:] {
			byTip[p] = m
		}
	}
	tips, err := repo.Tips(ctx, w.itemBranches)
	if err != nil {
		return nil, err
	}
	done := map[int]itemtask.Outcome{}
	for _, it := range its {
		t := w.TreeOf(it)
		m, ok := byItem[it.ID]
		if !ok {
			if m, ok = byTip[tips[t.Branch]]; !ok {
				continue
			}
		}
		commits, err := repo.Commits(ctx, m.Parents[0], m.Parents[1])
		if err != nil {
			return nil, err
		}
		done[it.Index] = itemtask.Outcome{Branch: t.Branch, Commits: commits}
	}
	return done, nil
}

// mergeMessage is the message of the merge of name (an item's id, or the
// job branch) by runner job jobID.
func mergeMessage(name, jobID string) string { return "Merge " + name + " (runner job " + jobID + ")" }

// itemOfMerge returns the id of the item that a merge's message says it
// merged into job jobID's branch.
func itemOfMerge(msg, jobID string) (string, bool) {
	id, ok := strings.CutPrefix(msg, "Merge ")
	if !ok {
		return "", false
	}
	return strings.CutSuffix(id, " (runner job "+jobID+")")
}

// ItemTree is an item's worktree and branch.
type ItemTree struct {
	Path, Branch string
	// Kept: an earlier run's worktree, which a resumed dispatch goes on
	// in; false when Acquire made it fresh.
	Kept bool
}

// Acquire makes a fresh worktree for an item on its branch, from commit
// from, or the job branch's tip when from is "" (a NATS worker's clone
// has no job branch: its task names the commit). A dispatch that goes on
// from checkpoints (its runner was lost) finds the worktree its earlier
// steps worked in, and keeps it (Kept); where there is none (the run was
// on another machine) the worktree is fresh and the earlier steps' work
// is not in it.
func (w *Worktrees) Acquire(ctx context.Context, it *items.Item, resumed bool, from string) (ItemTree, error) {
	from = cmp.Or(from, w.JobBranch)
	t := w.TreeOf(it)
	repo := w.User
	err := w.Admin(func() error {
		if _, err := os.Stat(t.Path); err == nil {
			if resumed {
				t.Kept = true
				return nil
			}
			if err := repo.RemoveWorktree(ctx, t.Path); err != nil {
				return err
			}
		}
		return repo.MakeWorktree(ctx, t.Path, func() error { return repo.ResetWorktree(ctx, t.Path, t.Branch, from) })
	})
	if err != nil {
		return t, worktreeFailed(it, err)
	}
	return t, nil
}

// worktreeFailed is the error of an item whose worktree could not be made.
func worktreeFailed(it *items.Item, err error) error {
	return fmt.Errorf("item %s: its worktree: %w", it.ID, err)
}

// TreeOf names an item's worktree and branch.
func (w *Worktrees) TreeOf(it *items.Item) ItemTree {
	name := worktreeName(it)
	return ItemTree{Path: filepath.Join(w.itemsDir, name), Branch: w.itemBranches + name}
}

// ItemDir is where an item's steps run: runner's directory in the item's
// worktree.
func (w *Worktrees) ItemDir(t ItemTree) string { return filepath.Join(t.Path, w.Prefix) }

// CloseItem removes an item's worktree; its branch stays.
func (w *Worktrees) CloseItem(ctx context.Context, t ItemTree) error {
	return w.Admin(func() error { return w.User.RemoveWorktree(context.WithoutCancel(ctx), t.Path) })
}

// Discard removes what a run of t left in the repository whose
// worktrees these are, under the worktree lock: its worktree, whatever a
// git killed midway left of it (gitwork.DiscardWorktree), and its branch.
// A NATS worker calls it once each run ended, its branch sent or not:
// a run cut off from its server has its git commands killed, those that
// make or remove its worktree among them.
func (w *Worktrees) Discard(ctx context.Context, t itemtask.Task) error {
	tree := w.TreeOf(&items.Item{Index: t.Index, ID: t.ItemID})
	return w.Admin(func() error { return w.User.DiscardWorktree(ctx, tree.Path, tree.Branch) })
}

// Merge merges the branch of an item that succeeded into the job
// branch (unless map.merge is none), and sets the outcome's commits (and
// its worktree, when it names none: one run elsewhere names its own). A
// merge that conflicts is aborted and fails the item as merge_conflict,
// its branch kept. An error means the job branch could not be read or
// merged into: the job cannot go on.
func (w *Worktrees) Merge(ctx context.Context, it *items.Item, attempt int, out itemtask.Outcome) (itemtask.Outcome, error) {
	if out.Branch == "" {
		return out, nil
	}
	ctx = context.WithoutCancel(ctx) // a merge is not left half done
	// The merges of other items, which the job branch may gain meanwhile,
	// hold none of this item's commits.
	commits, err := w.User.Commits(ctx, w.JobBranch, out.Branch)
	if err != nil {
		return out, fmt.Errorf("item %s: %w", it.ID, err)
	}
	out.Commits, out.Worktree = commits, cmp.Or(out.Worktree, w.TreeOf(it).Path)
	if len(commits) > 0 {
		diff, err := w.User.Diff(ctx, w.JobBranch+"..."+out.Branch, "")
		if err != nil {
			return out, fmt.Errorf("item %s: %w", it.ID, err)
		}
		out.FilesModified = diff.Files()
	}
	if out.Failed || !w.merge || len(commits) == 0 {
		return out, nil
	}
	unlock, err := w.Lock(ctx)
	if err != nil {
		return out, fmt.Errorf("item %s: %w", it.ID, err)
	}
	defer unlock()
	if err := w.Ready(ctx); err != nil {
		return out, fmt.Errorf("item %s: %w", it.ID, err)
	}
	conflicts, err := w.Git.Merge(ctx, out.Branch, mergeMessage(it.ID, w.JobID))
	if err != nil {
		return out, fmt.Errorf("item %s: %w", it.ID, err)
	}
	if len(conflicts) == 0 {
		out.Merged = true
		crashpoint.Hit(crashpoint.ItemMerged)
	} else {
		out.Failed, out.Conflicts = true, conflicts
		out.Failure = itemtask.Failure{
			Attempt: attempt, At: time.Now(), Kind: KindMergeConflict, ExitCode: 1, Duration: out.Duration,
			Message: fmt.Sprintf("merging %s into %s conflicts in %s; the merge was aborted, and the branch %s is kept",
				out.Branch, w.JobBranch, strings.Join(conflicts, ", "), out.Branch),
		}
	}
	return out, nil
}

// Recorded is called once the ledger recorded an item's end: the branch of
// an item that succeeded is deleted, its commits being on the job branch
// (or it having made none), unless map.merge is none, which keeps every
// branch. The branch of an item that failed is kept. The deletion holds
// the worktree lock (Admin), as the commands that make the items' branches
// do (a worktree's add, a fetch of an item's bundle): git deleting the
// last branch of a directory removes the directory of its reflog, and a
// git making a branch there at that moment fails ("unable to create
// directory for '.git/logs/refs/heads/runner-items/j/6'"; 1 round in 40
// of TestNATSGitWorkerCrash failed an item as transfer so).
func (w *Worktrees) Recorded(ctx context.Context, out itemtask.Outcome) {
	if out.Branch == "" || out.Failed || !w.merge {
		return
	}
	// A branch left behind holds nothing the job branch lacks: failing to
	// delete it is not worth failing the item, which has succeeded.
	if w.Admin(func() error { return w.User.DeleteBranch(context.WithoutCancel(ctx), out.Branch) }) == nil {
		crashpoint.Hit(crashpoint.ItemBranchDeleted)
	}
}

// unsafeRef is what may not appear in a git branch name's component (and
// more: only letters, digits, _ . - are kept).
var unsafeRef = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`[^A-Za-z0-9_.-]+|\.\.+`) })

// maxNameLen bounds an item's part of its branch and worktree names.
const maxNameLen = 64

// worktreeName is an item's part of its branch and worktree names: its id
// when git accepts it as it is, else the id made safe followed by the
// item's index, so that two ids made the same stay apart.
func worktreeName(it *items.Item) string {
	name := strings.Trim(unsafeRef().ReplaceAllString(it.ID, "-"), ".-")
	if name == it.ID && len(name) <= maxNameLen && !strings.HasSuffix(name, ".lock") {
		return name
	}
	if len(name) > maxNameLen {
		name = name[:maxNameLen]
	}
	if name = strings.TrimSuffix(strings.TrimRight(name, ".-"), ".lock"); name == "" {
		name = "item"
	}
	return name + "-" + strconv.Itoa(it.Index)
}

// WorkerRepo makes the repository a NATS worker makes a job's items'
// worktrees in (JobRefs.Repo), at dir, in the worker's store: a clone of
// the repository this process's directory is in (the worker's
// --work-dir), which shares its objects (git clone --shared: no object is
// copied), else a new, empty one; the job branch's tips fill either as the
// worker fetches them. Whatever git makes for the worker's items is in
// dir: the worker's store removed, nothing of it is left. A job copy
// opened again keeps the repository it made.
func WorkerRepo(ctx context.Context, dir string, env []string) error {
	if _, err := os.Stat(filepath.Join(dir, ".git")); err == nil {
		return nil
	}
	git := gitwork.Git{Env: env}
	top, _, err := git.TopLevel(ctx)
	switch {
	case errors.Is(err, gitwork.ErrNotRepository):
		_, err = git.Output(ctx, "init", "-q", dir)
	case err == nil:
		_, err = git.Output(ctx, "clone", "-q", "--shared", "--no-checkout", top, dir)
	}
	return err
}
