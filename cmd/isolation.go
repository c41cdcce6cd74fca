package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/runnerdev/runner/gitwork"
	"github.com/runnerdev/runner/job"
	"github.com/runnerdev/runner/mapreduce"
	"github.com/runnerdev/runner/workflow"
)

// checkIsolation refuses, before anything runs, a workflow whose map items
// run in git worktrees outside a git repository with a commit, saying how
// to make one; and it warns of changes in the checkout that the job, which
// works from the last commit, will not see.
func checkIsolation(ctx context.Context, g *globalOptions, wf *workflow.Workflow) error {
	if wf.Mode != workflow.MapReduce || wf.Map == nil || wf.Map.Isolation != workflow.IsolationWorktree {
		return nil
	}
	why := "map.isolation: worktree"
	if !wf.Map.IsolationSet {
		why += " (the default when the agent template has a claude: step or commit_required)"
	}
	dir, _ := os.Getwd()
	var git gitwork.Git
	if _, _, err := git.TopLevel(ctx); err != nil {
		return usagef("%s needs a git repository with at least one commit, and %s is not in one (%v); make one here with: git init && git add -A && git commit -m init (or set map.isolation: none)", why, dir, err)
	}
	head, err := git.Head(ctx)
	if err != nil {
		return err
	}
	if head == "" {
		return usagef("%s needs a git repository with at least one commit, and the one at %s has none; make one with: git commit --allow-empty -m init", why, dir)
	}
	dirty, err := git.DirtyPaths(ctx)
	if err != nil {
		return err
	}
	if len(dirty) > 0 {
		fmt.Fprintf(g.stderr, "runner: warning: the job works on the last commit (%.12s) in a worktree of its own; changes not committed are not part of it: %s\n",
			head, gitwork.Names(dirty))
	}
	return nil
}

// mergeFlagHelp is --merge's help, for run and resume.
const mergeFlagHelp = "when the job succeeds, merge its branch into the branch it started on (map.isolation: worktree; as merge_back: true)"

// checkMerge refuses, before anything runs, a final merge asked for (by
// --merge or merge_back: true) that could not happen: the workflow has no
// job branch, or no branch is checked out here to merge it into.
func checkMerge(ctx context.Context, wf *workflow.Workflow, flag bool) error {
	if !flag && !wf.MergeBack {
		return nil
	}
	if wf.Mode != workflow.MapReduce || wf.Map == nil || wf.Map.Isolation != workflow.IsolationWorktree {
		return usagef("--merge merges the job branch of a MapReduce workflow whose map runs in git worktrees (map.isolation: worktree), and %s has none", wf.File)
	}
	branch, err := gitwork.Git{}.Branch(ctx)
	if err != nil {
		return err
	}
	if branch == "" {
		return usagef("a merge of the job branch (--merge or merge_back: true) goes into the branch checked out here, and HEAD is detached: check out a branch first")
	}
	return nil
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
	switch {
	case err != nil:
		return nil
	case wf.Map == nil || wf.Map.Isolation != workflow.IsolationWorktree:
		return usagef("--merge merges the job branch of a job whose map runs in git worktrees (map.isolation: worktree), and job %s has none", id)
	case st.Meta.TargetBranch == "":
		return usagef("job %s started on a detached HEAD: there is no branch to merge its branch runner/%s into; merge it yourself: git merge --no-ff runner/%s", id, id, id)
	}
	return nil
}

// writeEndOfJob says where the work of a job whose map ran in git
// worktrees is: merged into the branch the job started on, or on the job
// branch, with the command that merges it. merge says that a merge was
// asked for.
func writeEndOfJob(w io.Writer, res jobResult, merge bool) {
	end := res.end
	switch end.Merged {
	case mapreduce.MergedByGit:
		fmt.Fprintf(w, "runner: merged the job's branch %s into %s\n", end.Branch, end.Target)
		return
	case mapreduce.MergedByBlock:
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
