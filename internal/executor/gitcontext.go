package executor

import (
	"context"
	"strings"
	"sync"

	"github.com/runnerdev/runner/internal/gitwork"
	"github.com/runnerdev/runner/workflow/interp"
)

// emptyTree is git's empty tree: what a repository without commits is
// diffed against.
const emptyTree = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"

// gitBases are the HEADs the git-context variables count from: for each
// directory that steps run in, HEAD before its first step.
type gitBases struct {
	mu    sync.Mutex
	bases map[string]string
}

// base returns dir's base, recording head as it when it has none.
func (b *gitBases) base(dir, head string) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.bases == nil {
		b.bases = map[string]string{}
	}
	if base, ok := b.bases[dir]; ok {
		return base
	}
	b.bases[dir] = head
	return head
}

// gitContext tracks the git-context variables around one step (Prodigy's
// GitChangeTracker, executor/context.rs), for a workflow that reads them.
type gitContext struct {
	g      gitwork.Git
	before string // HEAD before the step
	base   string // HEAD before the first step in this directory
	ok     bool   // the directory is in a git work tree
}

// trackGit records HEAD before a step, when the workflow reads the
// git-context variables (Executor.GitContext); nil otherwise.
func (x *Executor) trackGit(ctx context.Context, r Run) *gitContext {
	if !x.GitContext {
		return nil
	}
	t := &gitContext{g: gitwork.Git{Dir: r.Dir, Env: x.Env, Grace: x.Grace}}
	head, err := t.g.Head(ctx)
	t.ok = err == nil
	t.before = head
	t.base = x.gitBases.base(r.Dir, head)
	return t
}

// set defines, after the step, ${step.*} (what the step's commits did)
// and ${workflow.*} (what every commit since the first step did): commits,
// their count, the files they added, modified, deleted and changed, and
// the lines they inserted and deleted. Outside a git work tree they are
// empty.
func (t *gitContext) set(ctx context.Context, sc *Scope) {
	if t == nil {
		return
	}
	var head string
	if t.ok {
		head, _ = t.g.Head(ctx)
	}
	step := t.changes(ctx, t.before, head)
	step["commits"] = interp.JSONList(anyList(strings.Fields(step["commits"].(string))))
	for k, v := range step {
		sc.SetIn("step", k, v)
	}
	for k, v := range t.changes(ctx, t.base, head) {
		sc.SetIn("workflow", k, v)
	}
}

// changes are the git-context values of the commits from..to: the commits
// (space-separated, oldest first) and the files as Prodigy's tracker
// writes them.
func (t *gitContext) changes(ctx context.Context, from, to string) map[string]any {
	var commits []string
	var diff gitwork.DiffStat
	if to != "" && to != from {
		commits, _ = t.g.Commits(ctx, from, to)
		diff, _ = t.g.Diff(ctx, cmpOr(from, emptyTree), to)
	}
	return map[string]any{
		"commits": strings.Join(commits, " "), "commit_count": len(commits),
		"files_added": strings.Join(diff.Added, " "), "files_modified": strings.Join(diff.Modified, " "),
		"files_deleted": strings.Join(diff.Deleted, " "), "files_changed": strings.Join(diff.Files(), " "),
		"insertions": diff.Insertions, "deletions": diff.Deletions,
	}
}

// cmpOr is s, or otherwise when s is empty.
func cmpOr(s, otherwise string) string {
	if s == "" {
		return otherwise
	}
	return s
}

// anyList is strs as a list of values.
func anyList(strs []string) []any {
	out := make([]any, len(strs))
	for i, s := range strs {
		out[i] = s
	}
	return out
}
