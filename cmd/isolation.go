package cmd

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/runnerdev/runner/gitwork"
	"github.com/runnerdev/runner/workflow"
)

// maxDirtyShown is how many uncommitted paths the warning names.
const maxDirtyShown = 5

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
		shown := dirty[:min(len(dirty), maxDirtyShown)]
		more := ""
		if len(dirty) > len(shown) {
			more = fmt.Sprintf(" and %d more", len(dirty)-len(shown))
		}
		fmt.Fprintf(g.stderr, "runner: warning: the job works on the last commit (%.12s) in a worktree of its own; changes not committed are not part of it: %s%s\n",
			head, strings.Join(shown, ", "), more)
	}
	return nil
}
