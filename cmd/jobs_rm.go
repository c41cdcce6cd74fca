package cmd

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/runnerdev/runner/internal/gitwork"
	"github.com/runnerdev/runner/internal/job"
	"github.com/runnerdev/runner/internal/jobtree"
	"github.com/runnerdev/runner/internal/state"
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
then its directory in the state dir. Each removal is printed on one line.

A running job is never removed. A job whose branches hold commits that no
other branch has (work not merged) is kept, saying which, unless --force.`,
		Example: `  runner jobs rm deploy-20261122-101500-a1b2c3
  runner jobs rm latest --dry-run`,
		Aliases: []string{"remove"},
		Args:    minArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			ids, err := jobIDs(g, args)
			if err != nil {
				return err
			}
			return newRemover(c.Context(), g, o).removeAll(ids, true)
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
	return newRemover(ctx, g, o.removeOptions).removeAll(ids, false)
}

// lastActive is when a job last ran: when it ended, or when it started
// if it never ended.
func lastActive(m state.Meta) time.Time {
	if m.Finished.IsZero() {
		return m.Started
	}
	return m.Finished
}

// jobIDs resolves each of args as jobID does, each id once.
func jobIDs(g *globalOptions, args []string) ([]string, error) {
	var ids []string
	seen := map[string]bool{}
	for _, a := range args {
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
// repository runner runs in.
type remover struct {
	ctx    context.Context
	g      *globalOptions
	o      removeOptions
	repo   gitwork.Git
	inRepo bool
}

func newRemover(ctx context.Context, g *globalOptions, o removeOptions) *remover {
	return &remover{ctx: ctx, g: g, o: o, inRepo: inGitWorkTree(ctx)}
}

// removeAll removes the jobs ids, each failure said on stderr as it
// comes. A job kept for what it is fails the command only when strict
// (the user named it); a removal that failed always does.
func (r *remover) removeAll(ids []string, strict bool) error {
	failed := 0
	for _, id := range ids {
		err := r.remove(id)
		if err == nil {
			continue
		}
		printError(r.g.stderr, err)
		if strict || !errors.As(err, new(keptError)) {
			failed++
		}
	}
	if failed > 0 {
		return alreadyReported(fmt.Errorf("%d of %d jobs not removed", failed, len(ids)))
	}
	return nil
}

// remove removes job id: its worktrees, its branches, then its state
// directory, holding its lock so that no process takes it on meanwhile;
// with --dry-run it says what would go.
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
	left, err := r.leftovers(j)
	if err != nil {
		return err
	}
	if r.o.DryRun {
		for _, w := range left.Worktrees {
			fmt.Fprintln(r.g.stdout, "would remove worktree", w)
		}
		for _, b := range left.Branches {
			fmt.Fprintln(r.g.stdout, "would remove branch", b.Name)
		}
		fmt.Fprintln(r.g.stdout, "would remove job", id)
		return nil
	}
	removed := func(what string) { fmt.Fprintln(r.g.stdout, "removed", what) }
	if err := jobtree.Clear(r.ctx, r.repo, left, removed); err != nil {
		return fmt.Errorf("job %s not removed: %w", id, err)
	}
	if err := j.Remove(); err != nil {
		return err
	}
	removed("job " + id)
	return nil
}

// leftovers returns what job j has in the repository: the worktrees
// under its directory and, when it ran on a job branch, its branches. It
// refuses (keptError) a job whose branches hold commits no other branch
// has, unless --force, and a job that ran on a job branch when runner is
// not in a git work tree (--force removes only its state).
func (r *remover) leftovers(j *state.Job) (jobtree.Leftovers, error) {
	id := j.Meta.ID
	onBranch := ranOnJobBranch(j)
	if !r.inRepo {
		if onBranch && !r.o.Force {
			return jobtree.Leftovers{}, keptf("job %s kept: it ran in git worktrees, and runner is not in a git work tree: run this in the job's repository to remove its worktrees and branches (--force removes only its state)", id)
		}
		return jobtree.Leftovers{}, nil
	}
	var branches []string
	if onBranch {
		refs := jobtree.JobRefs{ID: id, ItemBranches: j.Meta.ItemBranches}
		branches = []string{jobtree.Branch(id), refs.ItemPrefix()}
	}
	left, err := jobtree.Survey(r.ctx, r.repo, j.Dir, branches...)
	if err != nil {
		return left, fmt.Errorf("job %s kept: %w", id, err)
	}
	if unmerged := left.Unmerged(); len(unmerged) > 0 && !r.o.Force {
		return left, keptf("job %s kept: %s; merge what you keep (git merge --no-ff BRANCH), or --force deletes them", id, describeUnmerged(unmerged, j.Meta.TargetBranch))
	}
	return left, nil
}

// describeUnmerged says which branches hold commits no other branch has.
func describeUnmerged(bs []jobtree.LeftBranch, target string) string {
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
// job whose copy cannot be read is taken to have.
func ranOnJobBranch(j *state.Job) bool {
	wf, err := workflow.Load(j.WorkflowCopy())
	if err != nil {
		return true
	}
	job.RestoreIsolation(wf, j.Meta)
	return wf.RunsInWorktree()
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
