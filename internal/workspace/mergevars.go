package workspace

import (
	"context"
	"strconv"
	"strings"

	"github.com/runnerdev/runner/internal/gitwork"
)

// Prodigy's limits on ${merge.commits} and ${merge.modified_files}
// (merge_orchestrator.rs, GitOperationsConfig).
const (
	maxMergeCommits = 100
	maxMergeFiles   = 500
)

// mergeVars are the ${merge.*} variables of a merge: block that merges
// the job branch into target, as Prodigy's init_merge_variables sets them:
// the worktree's name (the job id; ${merge.worktree_path} is its
// directory), the branches, the session (the job id), and what the job
// branch holds that target does not: its commits (newest first, at most
// 100) and the files they changed (at most 500), as JSON, counts and
// comma-separated lists. The counts are of all of them.
func (t *Tree) mergeVars(ctx context.Context, target string) (map[string]any, error) {
	commits, ids, total, err := mergeCommits(ctx, t.User, target, t.JobBranch)
	if err != nil {
		return nil, err
	}
	diff, err := t.User.Diff(ctx, target+"..."+t.JobBranch, "")
	if err != nil {
		return nil, err
	}
	files, paths := modifiedFiles(diff)
	return map[string]any{
		"worktree": t.JobID, "worktree_path": t.Root, "source_branch": t.JobBranch, "target_branch": target, "session_id": t.JobID,
		"commits": commits, "commit_count": total, "commit_ids": strings.Join(ids, ", "),
		"modified_files": files, "file_count": len(diff.Files()), "file_list": strings.Join(paths, ", "),
	}, nil
}

// mergeCommits returns the commits of head that base lacks, newest first,
// at most maxMergeCommits of them as Prodigy's commit objects and their
// short ids, and how many there are in all.
func mergeCommits(ctx context.Context, g gitwork.Git, base, head string) (commits []any, ids []string, total int, err error) {
	count, err := g.Output(ctx, "rev-list", "--count", base+".."+head)
	if err != nil {
		return nil, nil, 0, err
	}
	total, _ = strconv.Atoi(count)
	const sep, field = "\x1e", "\x1f"
	out, err := g.Output(ctx, "-c", "core.quotePath=false", "log", "-n", strconv.Itoa(maxMergeCommits), "--name-only",
		"--format="+sep+"%H"+field+"%h"+field+"%an"+field+"%ae"+field+"%cI"+field+"%B"+field, base+".."+head)
	if err != nil {
		return nil, nil, 0, err
	}
	commits = []any{}
	for rec := range strings.SplitSeq(out, sep) {
		f := strings.SplitN(rec, field, 7)
		if len(f) < 7 {
			continue
		}
		changed := []any{}
		for name := range strings.SplitSeq(f[6], "\n") {
			if name = strings.TrimSpace(name); name != "" {
				changed = append(changed, name)
			}
		}
		commits = append(commits, map[string]any{
			"id": f[0], "short_id": f[1], "author": map[string]any{"name": f[2], "email": f[3]},
			"timestamp": f[4], "message": strings.TrimSpace(f[5]), "files_changed": changed,
		})
		ids = append(ids, f[1])
	}
	return commits, ids, total, nil
}

// modifiedFiles are the files of diff as Prodigy's file objects, at most
// maxMergeFiles: {path, modification_type}, and their paths.
func modifiedFiles(diff gitwork.DiffStat) (files []any, paths []string) {
	files = []any{}
	for _, group := range []struct {
		paths []string
		kind  string
	}{{diff.Added, "Added"}, {diff.Modified, "Modified"}, {diff.Deleted, "Deleted"}} {
		for _, p := range group.paths {
			if len(files) == maxMergeFiles {
				return files, paths
			}
			files = append(files, map[string]any{"path": p, "modification_type": group.kind})
			paths = append(paths, p)
		}
	}
	return files, paths
}
