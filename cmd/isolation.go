package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/runnerdev/runner/internal/job"
	"github.com/runnerdev/runner/internal/state"
	"github.com/runnerdev/runner/internal/workspace"
	"github.com/runnerdev/runner/workflow"
)

// checkIsolation refuses, before anything runs, a workflow that runs in
// git worktrees (Workflow.RunsInWorktree) outside a git repository with a
// commit, saying how to make one; and it warns of changes in the checkout
// that the job, which works from the last commit, will not see.
func checkIsolation(ctx context.Context, g *globalOptions, wf *workflow.Workflow) error {
	if !wf.RunsInWorktree() {
		return nil
	}
	why, without := "map.isolation: worktree", "set map.isolation: none"
	switch {
	case wf.Mode != workflow.MapReduce:
		why, without = "a standard workflow with merge:, merge_back: true or isolation: worktree (its commands run in a git worktree, on a job branch)", "remove them"
		if !wf.WantsJobBranch() {
			why, without = "a standard workflow with a claude: step or commit_required (its commands run in a git worktree, on a job branch)", "run it in place: --in-place, or isolation: none"
		}
	case !wf.Map.IsolationSet:
		why += " (the default when the agent template has a claude: step or commit_required, or the file has merge: or merge_back: true)"
	}
	dir, _ := os.Getwd()
	head, dirty, err := workspace.StartPoint(ctx)
	switch {
	case errors.Is(err, workspace.ErrNotWorkTree):
		return usagef("%s needs a git repository with at least one commit, and %s is not in one (%v); make one here with: git init && git add -A && git commit -m init (or %s)", why, dir, err, without)
	case err != nil:
		return err
	case head == "":
		return usagef("%s needs a git repository with at least one commit, and the one at %s has none; make one with: git commit --allow-empty -m init", why, dir)
	}
	if len(dirty) > 0 {
		fmt.Fprintf(g.stderr, "runner: warning: the job works on the last commit (%.12s) in a worktree of its own; changes not committed are not part of it: %s\n",
			head, workspace.Names(dirty))
	}
	return nil
}

// placeWorkflow decides, before anything runs, where a standard
// workflow's commands run (wf.Isolation, which the job records for
// resume): in the checkout with --in-place, which a file that asks for a
// job branch refuses; in the checkout outside a git work tree when only
// its steps (claude:, commit_required) made a job worktree the default;
// else as the file says or its steps decide. A MapReduce workflow's map
// decides by map.isolation, which --in-place does not override.
func placeWorkflow(ctx context.Context, wf *workflow.Workflow, inPlace bool) error {
	switch {
	case wf.Mode == workflow.MapReduce && inPlace:
		return usagef("--in-place runs a standard workflow's commands in your checkout; a MapReduce workflow's items run where map.isolation says: set map.isolation: none")
	case wf.Mode == workflow.MapReduce:
		return nil
	case inPlace && wf.WantsJobBranch():
		return usagef("--in-place runs the commands in your checkout, and %s asks for a job branch (merge:, merge_back: true or isolation: worktree): remove that, or run without --in-place", wf.File)
	case inPlace:
		wf.Isolation = workflow.IsolationNone
	case wf.RunsInWorktree() && !wf.WantsJobBranch() && !workspace.InWorkTree(ctx):
		wf.Isolation = workflow.IsolationNone
	case wf.RunsInWorktree():
		wf.Isolation = workflow.IsolationWorktree
	default:
		wf.Isolation = workflow.IsolationNone
	}
	return nil
}

// newJobID returns the id of a job about to start (--job-id, else one
// made from the workflow's name and the time) and, when the workflow's
// map runs in git worktrees, the prefix of its items' branches to record.
// Before anything is recorded it refuses (exit 2) an id that cannot name a
// job, and for a workflow that runs in git worktrees an id that git cannot
// use in a branch name, or whose branches exist already: runner would
// reset or delete branches it did not make (the kept branches of an
// earlier job of that id whose state is gone, or the user's own).
func newJobID(ctx context.Context, wf *workflow.Workflow, id string) (string, string, error) {
	if id == "" {
		id = state.NewID(wf.Name, time.Now())
	}
	if err := state.CheckID(id); err != nil || !wf.RunsInWorktree() {
		return id, "", err
	}
	var itemBranches string
	if wf.Mode == workflow.MapReduce {
		itemBranches = workspace.ItemBranches(wf.Map, id)
	}
	names, samples := []string{workspace.Branch(id)}, []string{workspace.Branch(id)}
	if itemBranches != "" {
		names = append(names, strings.TrimSuffix(itemBranches, "/"))
		samples = append(samples, itemBranches+"item")
	}
	for _, name := range samples {
		if err := workspace.CheckBranchName(ctx, name); err != nil {
			return "", "", usagef("job id %q: %v: an id of a job with a git branch may not begin or end with '.', hold '..' or end in '.lock'; choose another --job-id", id, err)
		}
	}
	in, err := workspace.BranchesInTheWay(ctx, names...)
	if err != nil {
		return "", "", err
	}
	if len(in) > 0 {
		return "", "", usagef("job %s: its branches (%s) would meet branches this repository has: %s (left by an earlier job %s whose state is gone, or your own); runner never resets or deletes a branch it did not make: delete them (git branch -D) or choose another --job-id",
			id, strings.Join(names, ", "), workspace.Names(in), id)
	}
	return id, itemBranches, nil
}

// mergeFlagHelp is --merge's help, for run and resume.
const mergeFlagHelp = "when the job succeeds, merge its branch into the branch it started on (map.isolation: worktree, or a standard workflow in a worktree; as merge_back: true)"

// yesFlagHelp is -y's help, for run and resume.
const yesFlagHelp = "answer yes to the merge question: as --merge for a job with a job branch (Prodigy's -y); nothing for one without"

// branchHolders are the workflows that have a job branch, in the messages
// that refuse --merge.
const branchHolders = "a workflow that runs in git worktrees (a MapReduce map with isolation: worktree, or a standard workflow with a claude: step, commit_required, merge:, merge_back: true or isolation: worktree)"

// checkMerge refuses, before anything runs, a final merge asked for (by
// --merge or merge_back: true) that could not happen: the workflow has no
// job branch, or no branch is checked out here to merge it into.
func checkMerge(ctx context.Context, wf *workflow.Workflow, flag bool) error {
	if !flag && !wf.MergeBack {
		return nil
	}
	if !wf.RunsInWorktree() {
		return usagef("--merge merges the job branch of %s, and %s has none", branchHolders, wf.File)
	}
	branch, err := workspace.CurrentBranch(ctx)
	if err != nil {
		return err
	}
	if branch == "" {
		return usagef("a merge of the job branch (--merge or merge_back: true) goes into the branch checked out here, and HEAD is detached: check out a branch first")
	}
	return nil
}

// targetBranch is the branch a job of wf that runs in git worktrees
// merges its job branch into: the one checked out here ("" when HEAD is
// detached, or when wf has no job branch).
func targetBranch(ctx context.Context, wf *workflow.Workflow) (string, error) {
	if !wf.RunsInWorktree() {
		return "", nil
	}
	return workspace.CurrentBranch(ctx)
}

// checkResumeMerge refuses, before the job is resumed, runner resume
// --merge of a job that has no job branch or no branch to merge it into.
// A job that cannot be read is left to resume to report.
func checkResumeMerge(g *globalOptions, id string) error {
	st, err := g.store().Open(id)
	if err != nil {
		return nil
	}
	wf, err := workflow.Load(st.WorkflowCopy())
	if err != nil {
		return nil
	}
	job.RestoreIsolation(wf, st.Meta)
	switch {
	case !wf.RunsInWorktree():
		return usagef("--merge merges the job branch of %s, and job %s has none", branchHolders, id)
	case st.Meta.TargetBranch == "":
		return usagef("job %s started on a detached HEAD: there is no branch to merge its branch runner/%s into; merge it yourself: git merge --no-ff runner/%s", id, id, id)
	}
	return nil
}

// resumeCompleted says whether runner resume reopens job id although it
// completed: a job whose final merge was not made (unmergedJob) is
// resumed to make it when merge (--merge, -y) or its merge_back: true asks
// for it; without, the refusal names the command that merges it. Any
// other job is left to job.Resume to answer.
func resumeCompleted(ctx context.Context, g *globalOptions, id string, merge bool) (bool, error) {
	target, mergeBack, ok := unmergedJob(ctx, g, id)
	switch {
	case !ok:
		return false, nil
	case merge || mergeBack:
		return true, nil
	}
	return false, fmt.Errorf("job %s: %w; its branch %s is not merged into %s: to merge it, run: runner resume --merge %s", id, job.ErrCompleted, workspace.Branch(id), target, id)
}

// unmergedJob reports whether job id completed on a job branch that is
// not merged into target, the branch the job started on: the merge was
// not asked for, or was refused while items were in the job's DLQ, which
// is empty now. mergeBack is its workflow's merge_back: true.
func unmergedJob(ctx context.Context, g *globalOptions, id string) (target string, mergeBack, ok bool) {
	st, err := g.store().Open(id)
	if err != nil || st.Meta.Status != state.Completed {
		return "", false, false
	}
	wf, err := workflow.Load(st.WorkflowCopy())
	if err != nil {
		return "", false, false
	}
	job.RestoreIsolation(wf, st.Meta)
	m := st.Meta
	if !wf.RunsInWorktree() || m.TargetBranch == "" || m.Items != nil && m.Items.DLQ > 0 || mergeBlockRan(st, wf) {
		return "", false, false
	}
	b, err := workspace.JobRefs{ID: id, ItemBranches: m.ItemBranches, Target: m.TargetBranch}.Branches(ctx)
	return m.TargetBranch, wf.MergeBack, err == nil && !b.Gone && !b.Merged
}

// writeMergeCommand says, after a dlq retry that emptied the DLQ of job
// id, the command that makes the final merge the job did not make then.
func writeMergeCommand(ctx context.Context, g *globalOptions, id string) {
	if target, _, ok := unmergedJob(ctx, g, id); ok {
		fmt.Fprintf(g.stderr, "runner: the DLQ is empty: to merge the job's branch %s into %s, run: runner resume --merge %s\n", workspace.Branch(id), target, id)
	}
}

// mergeBlockRan reports whether the merge: block of a job's workflow has
// run (its merge need not show in git: it may push, or open a pull
// request).
func mergeBlockRan(st *state.Job, wf *workflow.Workflow) bool {
	if wf.Merge == nil {
		return false
	}
	done, err := st.ReadJournal()
	return err != nil || len(done[job.PhaseMerge]) > 0
}

// writeEndOfJob says where the work of a job that ran in git worktrees
// is: merged into the branch the job started on, or on the job
// branch, with the command that merges it. merge says that a merge was
// asked for.
func writeEndOfJob(w io.Writer, res jobResult, merge bool) {
	end := res.end
	switch end.Merged {
	case workspace.MergedByGit:
		fmt.Fprintf(w, "runner: merged the job's branch %s into %s\n", end.Branch, end.Target)
		return
	case workspace.MergedByBlock:
		fmt.Fprintf(w, "runner: the merge: block ran to merge the job's branch %s into %s\n", end.Branch, end.Target)
		return
	}
	into := "your branch (HEAD was detached when the job started)"
	if end.Target != "" {
		into = end.Target + ", the branch the job started on,"
	}
	fmt.Fprintf(w, "runner: the job's work is on branch %s; to merge it into %s run in your checkout: git merge --no-ff %s\n", end.Branch, into, end.Branch)
	if merge && errors.As(res.err, new(job.ItemsInDLQ)) {
		fmt.Fprintf(w, "runner: not merged: a merge (--merge or merge_back: true) is made only when every item succeeded\n")
	}
}
