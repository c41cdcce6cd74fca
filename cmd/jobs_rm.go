package cmd

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/runnerdev/runner/internal/crashpoint"
	"github.com/runnerdev/runner/internal/job"
	"github.com/runnerdev/runner/internal/state"
	"github.com/runnerdev/runner/internal/workspace"
	"github.com/runnerdev/runner/workflow"
)

// removeOptions are the flags of jobs rm and jobs prune.
type removeOptions struct {
	Force  bool
	DryRun bool
}

func (o *removeOptions) addFlags(c *cobra.Command) {
	c.Flags().BoolVarP(&o.Force, "force", "f", false, "delete branches with commits no other branch has too")
	c.Flags().BoolVar(&o.DryRun, "dry-run", false, "list what would be removed, and remove nothing")
}

func newJobsRmCommand(g *globalOptions) *cobra.Command {
	var o removeOptions
	c := &cobra.Command{
		Use:   "rm JOB...",
		Short: "Remove jobs: their state, worktrees and merged branches",
		Long: `Remove each JOB (an id, a unique prefix of one, or latest): its git
worktrees, its branches (the job branch runner/JOB and its items' branches),
and its directory in the state dir. Each removal is printed on one line.

A running job is never removed. A job whose branches hold commits that no
other branch has (work not merged) is kept, saying which, unless --force.

A job is removed whole or not at all: its directory is renamed to a
tombstone first, and a removal that was cut short (killed) is finished by
the next jobs rm or prune, before anything else.`,
		Example: `  runner jobs rm deploy-20261122-101500-a1b2c3
  runner jobs rm latest --dry-run`,
		Aliases: []string{"remove"},
		Args:    minArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			r := newRemover(c.Context(), g, o)
			ids, err := jobIDs(g, args, r.finishTombstones())
			if err != nil {
				return err
			}
			return r.removeAll(ids, true)
		},
	}
	o.addFlags(c)
	return completesEveryJob(g, c)
}

// pruneOptions are jobs prune's flags.
type pruneOptions struct {
	removeOptions
	OlderThan string
	Status    []string
}

func newJobsPruneCommand(g *globalOptions) *cobra.Command {
	var o pruneOptions
	c := &cobra.Command{
		Use:   "prune --older-than AGE",
		Short: "Remove the jobs that ended longer ago than AGE",
		Long: `Remove, as jobs rm does, every job that ended (or, never having ended,
started) longer ago than --older-than (30d, 12h, 1w...), of the statuses
--status names (all of them when none is). Running jobs and jobs with
unmerged work (without --force) are kept, each said on stderr; they do not
make prune fail.`,
		Example: `  runner jobs prune --older-than 30d --dry-run
  runner jobs prune --older-than 7d --status completed,failed`,
		Args: exactArgs(0),
		RunE: func(c *cobra.Command, _ []string) error {
			return runPrune(c.Context(), g, o)
		},
	}
	o.addFlags(c)
	c.Flags().StringVar(&o.OlderThan, "older-than", "", "remove jobs that ended longer ago than this (30d, 12h)")
	c.Flags().StringSliceVar(&o.Status, "status", nil, "only jobs of these statuses ("+strings.Join(jobStatuses, ", ")+")")
	return c
}

func runPrune(ctx context.Context, g *globalOptions, o pruneOptions) error {
	if o.OlderThan == "" {
		return usagef("jobs prune needs --older-than AGE (30d, 12h): the jobs that ended longer ago go")
	}
	age, err := workflow.ParseDuration(o.OlderThan)
	if err != nil {
		return usagef("--older-than: %v", err)
	}
	statuses, err := statusSet(o.Status)
	if err != nil {
		return err
	}
	if statuses == nil {
		statuses, _ = statusSet(jobStatuses) // not the jobs that cannot be read
	}
	r := newRemover(ctx, g, o.removeOptions)
	r.finishTombstones()
	jobs, err := g.store().List()
	if err != nil {
		return err
	}
	cutoff := time.Now().Add(-age)
	var ids []string
	for _, m := range withStatus(jobs, statuses) {
		if lastActive(m).Before(cutoff) {
			ids = append(ids, m.ID)
		}
	}
	return r.removeAll(ids, false)
}

// lastActive is when a job last ran: when it ended, or when it started
// if it never ended.
func lastActive(m state.Meta) time.Time {
	if m.Finished.IsZero() {
		return m.Started
	}
	return m.Finished
}

// jobIDs resolves each of args as jobID does, each id once, but an id
// that names a job whose removal was just finished (removed).
func jobIDs(g *globalOptions, args []string, removed map[string]bool) ([]string, error) {
	var ids []string
	seen := map[string]bool{}
	for _, a := range args {
		if removed[a] {
			continue
		}
		id, err := g.jobID(a)
		if err != nil {
			return nil, err
		}
		if !seen[id] {
			seen[id] = true
			ids = append(ids, id)
		}
	}
	return ids, nil
}

// keptError is a job that was not removed because of what it is (running,
// or holding work not merged), not because a removal failed.
type keptError struct{ err error }

func (k keptError) Error() string { return k.err.Error() }
func (k keptError) Unwrap() error { return k.err }

func keptf(format string, args ...any) error { return keptError{fmt.Errorf(format, args...)} }

// remover removes jobs with their git worktrees and branches, in the
// repository runner runs in. A job is removed whole or not at all,
// whenever the process dies: once nothing keeps it, its directory is
// renamed to its tombstone (state.Job.Bury), then its worktrees and
// branches go, then the tombstone. Each removal first finishes those of
// the removals before it that were cut short (finishTombstones).
type remover struct {
	ctx    context.Context
	g      *globalOptions
	o      removeOptions
	inRepo bool
	// tried and failed count the jobs that finishTombstones took on and
	// those that it failed to finish (kept ones too when strict).
	tried, failed int
}

func newRemover(ctx context.Context, g *globalOptions, o removeOptions) *remover {
	return &remover{ctx: ctx, g: g, o: o, inRepo: workspace.InWorkTree(ctx)}
}

// removeAll removes the jobs ids, each failure said on stderr as it
// comes. A job kept for what it is fails the command only when strict
// (the user named it); a removal that failed always does.
func (r *remover) removeAll(ids []string, strict bool) error {
	failed := r.failed
	for _, id := range ids {
		if r.failedTo(r.remove(id), strict) {
			failed++
		}
	}
	if failed > 0 {
		return alreadyReported(fmt.Errorf("%d of %d jobs not removed", failed, r.tried+len(ids)))
	}
	return nil
}

// failedTo says err, the end of a job's removal, on stderr, and reports
// whether it fails the command.
func (r *remover) failedTo(err error, strict bool) bool {
	if err == nil {
		return false
	}
	printError(r.g.stderr, err)
	return strict || !errors.As(err, new(keptError))
}

// finishTombstones finishes the removals that were cut short (their jobs'
// tombstones), each as the removal would have gone on, and returns the
// ids of the jobs it removed. A tombstone that another process holds is
// that process's to finish; one that cannot be finished here is kept,
// saying why.
func (r *remover) finishTombstones() map[string]bool {
	store := r.g.store()
	ids, err := store.Tombstones()
	if r.failedTo(err, true) {
		r.tried, r.failed = r.tried+1, r.failed+1
	}
	removed := map[string]bool{}
	for _, id := range ids {
		err := r.finish(store, id)
		if errors.Is(err, state.ErrLocked) {
			continue // another process is finishing it
		}
		r.tried++
		if r.failedTo(err, false) {
			r.failed++
		} else if err == nil {
			removed[id] = true
		}
	}
	return removed
}

// finish finishes the removal of job id, cut short: what it left in the
// repository (whatever its branches hold: the removal that began it
// decided), then its tombstone.
func (r *remover) finish(store state.Store, id string) error {
	j, whole, err := store.OpenTombstone(id)
	if err != nil {
		return err
	}
	if !r.o.DryRun {
		if err := j.Lock(false); err != nil {
			return err
		}
		defer j.Unlock()
	}
	var left workspace.Leftovers
	if whole {
		if left, err = r.leftovers(j, store.Layout(id).Dir, true); err != nil {
			return err
		}
	}
	if r.o.DryRun {
		r.tell(id, left)
		return nil
	}
	return r.clear(j, left)
}

// remove removes job id: its directory renamed to its tombstone, its
// worktrees and branches, then the tombstone, holding its lock so that
// no process takes it on meanwhile; with --dry-run it says what would go.
func (r *remover) remove(id string) error {
	j, err := r.g.store().Open(id)
	if err != nil {
		return err
	}
	if pid, err := j.Owner(); err != nil {
		return err
	} else if pid != 0 {
		return keptf("job %s kept: it is running (process %d holds it)", id, pid)
	}
	if !r.o.DryRun {
		if err := j.Lock(false); errors.Is(err, state.ErrLocked) {
			return keptf("job %s kept: a process took it on meanwhile", id)
		} else if err != nil {
			return err
		}
		defer j.Unlock()
	}
	left, err := r.leftovers(j, j.Dir, false)
	if err != nil {
		return err
	}
	if r.o.DryRun {
		r.tell(id, left)
		return nil
	}
	if err := j.Bury(); err != nil {
		return err
	}
	crashpoint.Hit(crashpoint.JobBuried)
	return r.clear(j, left)
}

// tell says, for --dry-run, what removing job id would remove.
func (r *remover) tell(id string, left workspace.Leftovers) {
	for _, w := range left.Worktrees {
		fmt.Fprintln(r.g.stdout, "would remove worktree", w)
	}
	for _, b := range left.Branches {
		fmt.Fprintln(r.g.stdout, "would remove branch", b.Name)
	}
	fmt.Fprintln(r.g.stdout, "would remove job", id)
}

// clear removes what is left of job j, buried (or a tombstone): left, its
// worktrees and branches, the git commands doing it recorded in its
// tombstone (so that the next removal ends what they leave if this
// process dies: workspace.EndJobLeftovers), then the tombstone.
func (r *remover) clear(j *state.Job, left workspace.Leftovers) error {
	id := j.Meta.ID
	removed := func(what string) { fmt.Fprintln(r.g.stdout, "removed", what) }
	if err := workspace.Clear(r.ctx, j.Layout(), left, removed); err != nil {
		return fmt.Errorf("job %s: its removal was cut short: %w; runner jobs rm or prune finishes it", id, err)
	}
	if err := j.Remove(); err != nil {
		return err
	}
	removed("job " + id)
	return nil
}

// leftovers returns what job j has in the repository: the worktrees
// under dir, its directory before it was buried, and, when it ran on a
// job branch, its branches; first it ends what the git commands of its
// processes that died left (not with --dry-run). It refuses (keptError) a
// job whose branches hold commits no other branch has, unless --force or
// buried (its removal, cut short, decided), and a job that ran on a job
// branch when runner is not in a git work tree (--force removes only its
// state).
func (r *remover) leftovers(j *state.Job, dir string, buried bool) (workspace.Leftovers, error) {
	id := j.Meta.ID
	onBranch, unread := ranOnJobBranch(j)
	if !r.inRepo {
		if onBranch && !r.o.Force {
			what := "job " + id + " kept"
			if buried {
				what = "the removal of job " + id + ", cut short, not finished"
			}
			ran := "it ran in git worktrees"
			if unread != nil {
				ran = "its workflow copy cannot be read, so it may have run in git worktrees"
			}
			return workspace.Leftovers{}, keptf("%s: %s, and runner is not in a git work tree: run this in the job's repository to remove its worktrees and branches (--force removes only its state)", what, ran)
		}
		return workspace.Leftovers{}, nil
	}
	if !r.o.DryRun {
		if err := workspace.EndJobLeftovers(r.ctx, j.Layout()); err != nil {
			return workspace.Leftovers{}, fmt.Errorf("job %s kept: %w", id, err)
		}
	}
	var branches []string
	if onBranch {
		refs := workspace.JobRefs{ID: id, ItemBranches: j.Meta.ItemBranches}
		branches = []string{workspace.Branch(id), refs.ItemPrefix()}
	}
	left, err := workspace.Survey(r.ctx, dir, branches...)
	if err != nil {
		return left, fmt.Errorf("job %s kept: %w", id, err)
	}
	if unmerged := left.Unmerged(); len(unmerged) > 0 && !r.o.Force && !buried {
		return left, keptf("job %s kept: %s; merge what you keep (git merge --no-ff BRANCH), or --force deletes them", id, describeUnmerged(unmerged, j.Meta.TargetBranch))
	}
	return left, nil
}

// describeUnmerged says which branches hold commits no other branch has.
func describeUnmerged(bs []workspace.LeftBranch, target string) string {
	var parts []string
	for _, b := range bs {
		parts = append(parts, fmt.Sprintf("%s (%s)", b.Name, commits(b.Unmerged)))
	}
	where := "any other branch"
	if target != "" {
		where = target + " or any other branch"
	}
	return fmt.Sprintf("%s not merged into %s", strings.Join(parts, ", "), where)
}

// commits is n commits, in words.
func commits(n int) string {
	if n == 1 {
		return "1 commit"
	}
	return fmt.Sprintf("%d commits", n)
}

// ranOnJobBranch reports whether job j ran in git worktrees, on a job
// branch, as its workflow copy and metadata say (as resume decides); a
// job whose copy cannot be read (unread says why) is taken to have.
func ranOnJobBranch(j *state.Job) (on bool, unread error) {
	wf, err := workflow.Load(j.WorkflowCopy())
	if err != nil {
		return true, err
	}
	job.RestoreIsolation(wf, j.Meta)
	return wf.RunsInWorktree(), nil
}

// completesEveryJob has the shell complete each of c's arguments with the
// ids of the state dir's jobs not given yet.
func completesEveryJob(g *globalOptions, c *cobra.Command) *cobra.Command {
	c.ValidArgsFunction = func(_ *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		var out []cobra.Completion
		for _, comp := range g.completeJobs(toComplete) {
			id, _, _ := strings.Cut(comp, "\t")
			if !slices.Contains(args, id) {
				out = append(out, comp)
			}
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	}
	return c
}
