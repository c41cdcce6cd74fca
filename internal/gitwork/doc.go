// Package gitwork runs the git commands runner needs: HEAD and the commits
// a step made, the job's and the items' worktrees and branches, and merges
// that abort on conflict (only their own) and refuse a work tree in the
// middle of another operation.
//
// A Git runs git in one directory, through proc, so that an interrupt ends
// the hooks git started with it, and git itself dies with runner. Its
// methods read (Head, Branch, Commits, Diff, DirtyPaths, MergedBranches...)
// and change (NewWorktree, RemoveWorktree, Merge, DeleteBranch...) the
// repository; a failed git is an error in one form: the command, how it
// ended and git's line that says why on its first line, the rest of what
// git wrote below it (the paths in the way, a hook's reasons).
// A merge that conflicts is aborted and names the paths:
//
//	g := gitwork.Git{Dir: worktree, Env: env}
//	conflicts, err := g.Merge(ctx, "runner-items/j/item-3", "merge item 3")
//	if len(conflicts) > 0 {
//		// aborted: the work tree is as it was
//	}
//
// What a git killed with runner leaves is for the next process: Groups
// records the process group of each git command while it runs, so that the
// next process ends the hooks they started (EndLeftovers), and RemoveLocks,
// RemoveMergeLocks and RemoveRefLocks remove the lock files git left;
// RestoreWrittenSince, the files a merge killed mid-way wrote.
package gitwork
