package gitwork

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/runnerdev/runner/internal/proc"
)

// runMerge runs git merge of branch, whose tip is tip. When git refuses
// because files in the work tree are in the way, and each of them holds
// what the merge itself writes there, they are what a merge of the same
// commit left when it died writing the work tree (git dies with runner):
// they are put back as the index has them, and the merge runs again.
func (g Git) runMerge(ctx context.Context, branch, tip, message string) proc.Result {
	args := []string{"merge", "--no-ff", "--no-edit", "-m", message, branch}
	res := g.Run(ctx, args...)
	if res.Kind == proc.KindOK {
		return res
	}
	if paths := inTheWay(string(res.StderrTail)); len(paths) > 0 && g.restoreLeftovers(ctx, tip, paths) {
		return g.Run(ctx, args...)
	}
	return res
}

// inTheWay returns the paths that git's message says a merge would
// overwrite (untracked files, or local changes): the tab-indented lines
// after the line that says so.
func inTheWay(message string) []string {
	var paths []string
	listing := false
	for _, line := range strings.Split(message, "\n") {
		switch {
		case strings.HasSuffix(line, "would be overwritten by merge:"):
			listing = true
		case listing && strings.HasPrefix(line, "\t"):
			paths = append(paths, strings.TrimPrefix(line, "\t"))
		default:
			listing = false
		}
	}
	return paths
}

// restoreLeftovers puts paths (relative to the work tree's top) back as
// the index has them (an untracked one is removed) if each holds exactly
// the content it has in commit tip, and reports whether it did.
func (g Git) restoreLeftovers(ctx context.Context, tip string, paths []string) bool {
	top, _, err := g.TopLevel(ctx)
	if err != nil {
		return false
	}
	t := g.In(top)
	blobs, err := t.Output(ctx, append([]string{"ls-tree", "-z", "--format=%(objectname) %(path)", tip, "--"}, paths...)...)
	if err != nil {
		return false
	}
	want := map[string]string{}
	for _, entry := range strings.Split(blobs, "\x00") {
		if oid, path, ok := strings.Cut(entry, " "); ok {
			want[path] = oid
		}
	}
	hashes, err := t.Output(ctx, append([]string{"hash-object", "--"}, paths...)...)
	if err != nil {
		return false
	}
	for i, oid := range strings.Fields(hashes) {
		if i >= len(paths) || want[paths[i]] != oid {
			return false
		}
	}
	tracked, err := t.Output(ctx, append([]string{"ls-files", "-z", "--"}, paths...)...)
	if err != nil {
		return false
	}
	inIndex := map[string]bool{}
	for _, path := range strings.Split(tracked, "\x00") {
		inIndex[path] = true
	}
	for _, path := range paths {
		if inIndex[path] {
			_, err = t.Output(ctx, "checkout", "-q", "--", path)
		} else {
			err = os.Remove(filepath.Join(top, path))
		}
		if err != nil {
			return false
		}
	}
	return true
}

// RestoreWrittenSince puts back, as the index has them, the files of
// g.Dir's work tree written at since or later that differ from it: an
// untracked one is removed, a changed one checked out from the index. For
// a work tree that only a git killed in a merge wrote since (the job
// worktree, since its merge began): what is left is what that git wrote,
// whole or cut short (SIGTERM lands as a system call returns, between
// creating a file and writing it as readily as anywhere), which the same
// merge made again would refuse to overwrite. Older files (a step's) stay;
// so do ignored ones, which a merge overwrites, and tracked files deleted
// (a merge writes them again).
func (g Git) RestoreWrittenSince(ctx context.Context, since time.Time) error {
	top, _, err := g.TopLevel(ctx)
	if err != nil {
		return err
	}
	t := g.In(top)
	written := func(args ...string) ([]string, error) {
		res := t.Run(ctx, args...)
		if res.Kind != proc.KindOK {
			return nil, failed("git "+args[0], res)
		}
		var paths []string
		for _, path := range strings.Split(string(res.Stdout), "\x00") {
			if fi, err := os.Lstat(filepath.Join(top, path)); path != "" && err == nil && !fi.ModTime().Before(since) {
				paths = append(paths, path)
			}
		}
		return paths, nil
	}
	untracked, err := written("ls-files", "-z", "--others", "--exclude-standard")
	if err != nil {
		return err
	}
	for _, path := range untracked {
		if err := os.Remove(filepath.Join(top, path)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	changed, err := written("diff", "--name-only", "-z")
	if err != nil || len(changed) == 0 {
		return err
	}
	_, err = t.Output(ctx, append([]string{"checkout-index", "-f", "--"}, changed...)...)
	return err
}

// RemoveLocks removes the lock files a git that died holding them leaves
// in the git directory of g.Dir's work tree (index.lock, HEAD.lock and
// the others of its own files) and that of branch's ref, which make every
// later git there fail ("Unable to create ... .lock: File exists"). Only
// for a work tree that no git runs in and a branch no git updates now:
// the job worktree once the processes that died are ended.
func (g Git) RemoveLocks(ctx context.Context, branch string) error {
	out, err := g.Output(ctx, "rev-parse", "--absolute-git-dir", "--git-path", "refs/heads/"+branch+".lock")
	if err != nil {
		return err
	}
	dir, ref, _ := strings.Cut(out, "\n")
	locks, err := filepath.Glob(filepath.Join(dir, "*.lock"))
	if err != nil {
		return err
	}
	return removeSince(append(locks, inDir(g.Dir, ref)), time.Time{})
}

// mergeLocks are the files, in a work tree's git directory, that a git
// merge or git reset --merge locks (by "<file>.lock") while it runs;
// besides them it locks the branch checked out.
var mergeLocks = []string{"index", "HEAD", "ORIG_HEAD", "AUTO_MERGE"}

// RemoveMergeLocks removes the lock files that a git killed in a merge or
// in git reset --merge in g.Dir's work tree leaves (index.lock, HEAD.lock,
// ORIG_HEAD.lock, AUTO_MERGE.lock and that of the branch checked out),
// which make every later merge or reset there fail ("Unable to create
// ... .lock: File exists"), but only those made at since or later: since
// is when a process that died began to merge there, whose gits are all
// gone now. An older lock file is not its own, and stays.
func (g Git) RemoveMergeLocks(ctx context.Context, since time.Time) error {
	args := []string{"rev-parse"}
	for _, file := range mergeLocks {
		args = append(args, "--git-path", file+".lock")
	}
	branch, err := g.Branch(ctx)
	if err != nil {
		return err
	}
	if branch != "" {
		args = append(args, "--git-path", "refs/heads/"+branch+".lock")
	}
	out, err := g.Output(ctx, args...)
	if err != nil {
		return err
	}
	var locks []string
	for _, path := range strings.Split(out, "\n") {
		locks = append(locks, inDir(g.Dir, path))
	}
	return removeSince(locks, since)
}

// removeSince removes the files among paths that were made (last
// modified) at since or later (all of them for the zero time).
func removeSince(paths []string, since time.Time) error {
	for _, path := range paths {
		if fi, err := os.Lstat(path); err != nil || fi.ModTime().Before(since) {
			continue
		}
		if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	return nil
}

// RemoveRefLocks removes the lock files of the repository's refs and
// config that a git killed in a ref update left, made at since or later:
// since is when a process that died, whose gits are all gone now,
// started. A git killed deleting a branch can leave packed-refs.lock and
// packed-refs.new (even on SIGTERM, measured with git 2.39), or
// config.lock (it removes the branch's section of the config), and every
// later branch deletion in the repository fails on them ("Unable to
// create ... packed-refs.lock: File exists"); one killed updating a
// branch leaves refs/heads/NAME.lock. An older lock file is not one of
// theirs, and stays.
func (g Git) RemoveRefLocks(ctx context.Context, since time.Time) error {
	common, err := g.CommonDir(ctx)
	if err != nil {
		return err
	}
	var locks []string
	for _, file := range []string{"packed-refs.lock", "packed-refs.new", "config.lock"} {
		locks = append(locks, filepath.Join(common, file))
	}
	err = filepath.WalkDir(filepath.Join(common, "refs", "heads"), func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(path, ".lock") {
			locks = append(locks, path)
		}
		return nil // a directory that cannot be read holds no lock of ours to remove
	})
	if err != nil {
		return err
	}
	return removeSince(locks, since)
}
