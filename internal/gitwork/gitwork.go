package gitwork

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/runnerdev/runner/internal/proc"
)

// Git runs git in one directory. It goes through proc rather than os/exec
// for the reason steps do: a commit or a merge runs the repository's hooks,
// user code that may start processes of its own, and an interrupt must stop
// them with the command.
//
// git dies with runner (proc.Spec.DieWithParent): a merge does not go on
// for a runner that was killed. What git started (a hook) does not, and
// is for the process that comes after: with Groups set, the process group
// of each git command is recorded while it runs (see Groups).
type Git struct {
	Dir    string        // where git runs; "" = this process's directory
	Env    []string      // git's environment; nil = this process's
	Grace  time.Duration // between SIGTERM and SIGKILL on interrupt; 0 = proc's default
	Groups *Groups       // where the git commands' process groups are recorded; nil = nowhere
}

// Run runs git with args and returns how it ended, its stdout captured.
func (g Git) Run(ctx context.Context, args ...string) proc.Result {
	return g.runInput(ctx, nil, args...)
}

// runInput is Run with stdin as git's input (nil: none).
func (g Git) runInput(ctx context.Context, stdin io.Reader, args ...string) proc.Result {
	env := g.Env
	if env == nil {
		env = os.Environ()
	}
	if g.Groups != nil {
		rec := g.Groups.start()
		defer rec.end()
		ctx = proc.WithGroupHook(ctx, rec.started)
	}
	return proc.Run(ctx, proc.Spec{
		Args:          append([]string{"git"}, args...),
		Dir:           g.Dir,
		Env:           env,
		Stdin:         stdin,
		Grace:         g.Grace,
		CaptureStdout: true,
		DieWithParent: true,
	})
}

// Output runs git with args and returns its stdout, trimmed; a git that
// fails is an error naming the command, with git's own words (failed).
func (g Git) Output(ctx context.Context, args ...string) (string, error) {
	res := g.Run(ctx, args...)
	if res.Kind != proc.KindOK {
		return "", failed("git "+args[0], res)
	}
	return strings.TrimSpace(string(res.Stdout)), nil
}

// failed is the error of the git command what ("git merge runner/j") that
// failed as res, the one form of every failed git command that gitwork
// reports: what, how it ended and the line of git's that says why on the
// first line (all a one-line view of the error shows), then the rest of
// what git wrote (detail).
func failed(what string, res proc.Result) error {
	return errors.New(what + ": " + detail(res))
}

// Message is a failed git command's error and the line that says why:
// git's last "fatal:" or "error:" line (advice such as "remove the file
// manually to continue." may follow it), else the last line it wrote.
func Message(res proc.Result) string {
	why, _ := explain(res)
	if why == "" {
		return res.Err.Error()
	}
	return res.Err.Error() + ": " + why
}

// Bounds of detail: the lines kept from each end of a long message, and
// the bytes kept of a long line.
const (
	detailLines   = 12
	detailLineLen = 300
)

// detail is Message, and below it, on indented lines, the other lines of
// git's message (git's own, and its hooks', which git sends to stderr):
// the paths git names, a hook's reasons. A long message keeps its first
// and last lines and says how many it leaves out; a long line is cut.
func detail(res proc.Result) string {
	_, rest := explain(res)
	if len(rest) > 2*detailLines {
		cut := len(rest) - 2*detailLines
		rest = append(append(rest[:detailLines:detailLines], fmt.Sprintf("[... %d more lines ...]", cut)), rest[len(rest)-detailLines:]...)
	}
	var b strings.Builder
	b.WriteString(Message(res))
	for _, line := range rest {
		b.WriteString("\n  " + cutLine(line))
	}
	return b.String()
}

// explain splits what a failed git command wrote to stderr into the line
// that says why (its last "fatal:" or "error:" line, else its last line;
// "" when it wrote nothing) and the others, in order, each line cut to
// detailLineLen.
func explain(res proc.Result) (why string, rest []string) {
	tail := strings.TrimSpace(string(res.StderrTail))
	if tail == "" {
		return "", nil
	}
	lines := strings.Split(tail, "\n")
	if int64(len(res.StderrTail)) < res.StderrBytes {
		lines[0] = "[...]" // the tail starts mid-line
	}
	at := len(lines) - 1
	for i, line := range slices.Backward(lines) {
		if strings.HasPrefix(line, "fatal: ") || strings.HasPrefix(line, "error: ") {
			at = i
			break
		}
	}
	for i, line := range lines {
		if i != at {
			rest = append(rest, strings.TrimRight(line, "\r"))
		}
	}
	return cutLine(strings.TrimRight(lines[at], "\r")), rest
}

// cutLine is line, cut to detailLineLen bytes.
func cutLine(line string) string {
	if len(line) > detailLineLen {
		return line[:detailLineLen] + " [...]"
	}
	return line
}

// In returns g running in dir.
func (g Git) In(dir string) Git {
	g.Dir = dir
	return g
}

// ErrNotRepository is returned by TopLevel outside a git work tree.
var ErrNotRepository = errors.New("not in a git work tree")

// TopLevel returns the top directory of the work tree g.Dir is in, and
// g.Dir's path below it ("" at the top, else ending in a slash).
func (g Git) TopLevel(ctx context.Context) (top, prefix string, err error) {
	res := g.Run(ctx, "rev-parse", "--show-toplevel", "--show-prefix")
	if res.Kind != proc.KindOK {
		return "", "", fmt.Errorf("%w (%s)", ErrNotRepository, Message(res))
	}
	lines := strings.Split(strings.TrimRight(string(res.Stdout), "\n"), "\n")
	if len(lines) == 0 || lines[0] == "" {
		return "", "", ErrNotRepository // inside .git, or a bare repository
	}
	if len(lines) > 1 {
		prefix = lines[1]
	}
	return lines[0], prefix, nil
}

// CommonDir returns the repository's git directory that all its worktrees
// share (.git of the main one).
func (g Git) CommonDir(ctx context.Context) (string, error) {
	dir, err := g.Output(ctx, "rev-parse", "--git-common-dir")
	if err != nil {
		return "", err
	}
	return filepath.Abs(inDir(g.Dir, dir))
}

// Head returns the commit HEAD names, or "" when its branch has none yet.
func (g Git) Head(ctx context.Context) (string, error) { return g.commit(ctx, "HEAD") }

// Branch returns the branch checked out in g.Dir, or "" when HEAD is
// detached.
func (g Git) Branch(ctx context.Context) (string, error) {
	res := g.Run(ctx, "symbolic-ref", "-q", "--short", "HEAD")
	if res.Kind == proc.KindExit && res.ExitCode == 1 && len(res.StderrTail) == 0 {
		return "", nil // -q: HEAD is not a symbolic ref
	}
	if res.Kind != proc.KindOK {
		return "", failed("git symbolic-ref HEAD", res)
	}
	return strings.TrimSpace(string(res.Stdout)), nil
}

// Tip returns the commit branch points at, or "" when there is no such
// branch.
func (g Git) Tip(ctx context.Context, branch string) (string, error) {
	return g.commit(ctx, "refs/heads/"+branch)
}

// commit returns the commit rev names, or "" when it names none.
func (g Git) commit(ctx context.Context, rev string) (string, error) {
	res := g.Run(ctx, "rev-parse", "-q", "--verify", rev+"^{commit}")
	if res.Kind == proc.KindExit && res.ExitCode == 1 && len(res.StderrTail) == 0 {
		return "", nil // -q --verify fails silently
	}
	if res.Kind != proc.KindOK {
		return "", failed("git rev-parse "+rev, res)
	}
	return strings.TrimSpace(string(res.Stdout)), nil
}

// Commits lists the commits reachable from head and not from base, oldest
// first; base "" means all of head's history.
func (g Git) Commits(ctx context.Context, base, head string) ([]string, error) {
	rng := head
	if base != "" {
		rng = base + ".." + head
	}
	out, err := g.Output(ctx, "rev-list", "--reverse", rng)
	if err != nil {
		return nil, err
	}
	return append([]string{}, strings.Fields(out)...), nil
}

// DirtyPaths lists the paths with changes not committed (untracked files
// included), as git status names them.
func (g Git) DirtyPaths(ctx context.Context) ([]string, error) { return g.status(ctx) }

// ChangedPaths lists the tracked paths with changes not committed, staged
// or not: those a merge could clash with, untracked files being left
// alone by one (or making git refuse it).
func (g Git) ChangedPaths(ctx context.Context) ([]string, error) {
	return g.status(ctx, "--untracked-files=no")
}

// status lists the paths git status --porcelain names, with args.
func (g Git) status(ctx context.Context, args ...string) ([]string, error) {
	res := g.Run(ctx, append([]string{"status", "--porcelain", "-z"}, args...)...)
	if res.Kind != proc.KindOK {
		return nil, failed("git status", res)
	}
	var paths []string
	entries := strings.Split(string(res.Stdout), "\x00")
	for i := 0; i < len(entries); i++ {
		e := entries[i]
		if len(e) < 4 {
			continue
		}
		paths = append(paths, e[3:])
		if e[0] == 'R' || e[0] == 'C' {
			i++ // a rename's or copy's source follows it
		}
	}
	return paths, nil
}

// maxNamed is how many paths Names names.
const maxNamed = 5

// Names lists the first few of paths for a message, saying how many more
// there are.
func Names(paths []string) string {
	shown := paths[:min(len(paths), maxNamed)]
	more := ""
	if len(paths) > len(shown) {
		more = fmt.Sprintf(" and %d more", len(paths)-len(shown))
	}
	return strings.Join(shown, ", ") + more
}

// worktreeTries bounds how many times worktree runs a git worktree
// command that met another's worktree half made.
const worktreeTries = 5

// worktree runs git worktree with args, a command that can run again
// after it failed. git's records of worktrees are not safe against
// another git making one at the same moment (two jobs in one repository):
// a git that reads a record half made fails ("failed to read
// .git/worktrees/X/commondir"), and is run again after a moment.
func (g Git) worktree(ctx context.Context, args ...string) (string, error) {
	for try := 1; ; try++ {
		out, err := g.Output(ctx, append([]string{"worktree"}, args...)...)
		if err == nil || try == worktreeTries || !strings.Contains(err.Error(), "failed to read") || !strings.Contains(err.Error(), "worktrees/") {
			return out, err
		}
		time.Sleep(time.Duration(try) * 20 * time.Millisecond)
	}
}

// NewWorktree creates a worktree at path on a new branch pointing at
// from; a branch of that name already there is an error. The branch is
// made first, so that the worktree's add can run again (worktree).
func (g Git) NewWorktree(ctx context.Context, path, branch, from string) error {
	if _, err := g.Output(ctx, "branch", "--no-track", branch, from); err != nil {
		return err
	}
	return g.AddWorktree(ctx, path, branch)
}

// AddWorktree creates a worktree at path on branch, which exists.
func (g Git) AddWorktree(ctx context.Context, path, branch string) error {
	_, err := g.worktree(ctx, "add", "-q", path, branch)
	return err
}

// ResetWorktree creates a worktree at path on branch, made to point at
// from whether it exists or not.
func (g Git) ResetWorktree(ctx context.Context, path, branch, from string) error {
	_, err := g.worktree(ctx, "add", "-q", "-B", branch, path, from)
	return err
}

// RemoveWorktree removes the worktree at path, changes and all (even when
// locked). A path that is not there is not an error. Nor is a worktree
// that a git killed while it made it left half made (its .git file not
// written yet, or naming nothing git knows), as git dies with runner: its
// directory is removed and git forgets it (prune).
func (g Git) RemoveWorktree(ctx context.Context, path string) error {
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	err := g.removeWorktree(ctx, path)
	if err == nil || g.isWorktree(ctx, path) {
		return err
	}
	return errors.Join(os.RemoveAll(path), g.Prune(ctx))
}

// ForgetWorktree has git forget the worktree it records at path, locked
// or not, whose directory is gone (moved away with the directory above
// it; one still there is removed). A record that a git killed while it
// removed it left half made, which git no longer lists, is pruned
// instead.
func (g Git) ForgetWorktree(ctx context.Context, path string) error {
	err := g.removeWorktree(ctx, path)
	if err == nil {
		return nil
	}
	if perr := g.Prune(ctx); perr != nil {
		return errors.Join(err, perr)
	}
	if left, lerr := g.Worktrees(ctx, path); lerr != nil || len(left) > 0 {
		return errors.Join(err, lerr)
	}
	return nil
}

// isWorktree reports whether path is the top of a work tree git can use.
func (g Git) isWorktree(ctx context.Context, path string) bool {
	top, _, err := g.In(path).TopLevel(ctx)
	if err != nil {
		return false
	}
	real, err := filepath.EvalSymlinks(path)
	return err == nil && top == real
}

// removeWorktree has git remove the worktree at path, changes and all,
// locked or not.
func (g Git) removeWorktree(ctx context.Context, path string) error {
	_, err := g.worktree(ctx, "remove", "--force", "--force", path)
	return err
}

// MakeWorktree runs add, which makes a worktree at path. When add fails,
// what is in its way is cleared (ClearWorktree, then Prune) and add runs
// once more: a git process killed while it made or removed a worktree
// leaves one registered (locked, when it was being made) with its
// directory gone or half checked out, and git's own worktree add and
// remove race on the directory .git/worktrees ("could not create
// directory of '.git/worktrees/...'"). The second failure is the error.
func (g Git) MakeWorktree(ctx context.Context, path string, add func() error) error {
	if err := add(); err == nil || ctx.Err() != nil {
		return err
	}
	if err := errors.Join(g.ClearWorktree(ctx, path), g.Prune(ctx)); err != nil {
		return err
	}
	return add()
}

// ClearWorktree removes what is at path, whatever a git killed midway
// left of it: the worktrees git has there or below, made, half made
// (locked, its HEAD or its .git file not written yet: such a worktree
// breaks git bundle and fetch in the repository) or half removed (its
// directory gone, git still knowing it), and the directory.
func (g Git) ClearWorktree(ctx context.Context, path string) error {
	there, err := g.Worktrees(ctx, path)
	if err != nil {
		return err
	}
	for _, w := range there {
		if g.removeWorktree(ctx, w.Path) == nil {
			continue
		}
		// Half made: git refuses a directory without its .git file, and
		// forgets a worktree whose directory is gone.
		if err := os.RemoveAll(w.Path); err != nil {
			return err
		}
		if err := g.removeWorktree(ctx, w.Path); err != nil {
			return err
		}
	}
	return os.RemoveAll(path) // a directory git never knew as a worktree
}

// Prune forgets the worktrees whose directories are gone.
func (g Git) Prune(ctx context.Context) error {
	_, err := g.worktree(ctx, "prune")
	return err
}

// Worktree is one worktree of a repository.
type Worktree struct {
	Path   string
	Branch string // "" when detached
	// Locked is set when the worktree is locked: runner locks none, and
	// git's worktree add does until it has made it.
	Locked bool
}

// Worktrees lists the repository's worktrees whose paths are under dir.
func (g Git) Worktrees(ctx context.Context, dir string) ([]Worktree, error) {
	out, err := g.worktree(ctx, "list", "--porcelain")
	if err != nil {
		return nil, err
	}
	dir, err = filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	// git prints paths with symlinks resolved (those of the directory
	// above, for a worktree whose directory is gone).
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		dir = real
	} else if real, err := filepath.EvalSymlinks(filepath.Dir(dir)); err == nil {
		dir = filepath.Join(real, filepath.Base(dir))
	}
	var list []Worktree
	for _, w := range parseWorktrees(out) {
		if w.Path == dir || strings.HasPrefix(w.Path, dir+string(filepath.Separator)) {
			list = append(list, w)
		}
	}
	return list, nil
}

// parseWorktrees reads the output of git worktree list --porcelain.
func parseWorktrees(out string) []Worktree {
	var list []Worktree
	for _, block := range strings.Split(out, "\n\n") {
		var w Worktree
		for _, line := range strings.Split(block, "\n") {
			if p, ok := strings.CutPrefix(line, "worktree "); ok {
				w.Path = p
			} else if b, ok := strings.CutPrefix(line, "branch "); ok {
				w.Branch = strings.TrimPrefix(b, "refs/heads/")
			} else if line == "locked" || strings.HasPrefix(line, "locked ") {
				w.Locked = true
			}
		}
		list = append(list, w)
	}
	return list
}

// DiscardWorktree removes the worktree at path, whatever a git killed
// midway left of it (ClearWorktree), and deletes branch (one that is not
// there is not an error). A branch checked out in another worktree is
// not deleted: git refuses.
func (g Git) DiscardWorktree(ctx context.Context, path, branch string) error {
	if err := g.ClearWorktree(ctx, path); err != nil {
		return err
	}
	if err := g.DeleteBranch(ctx, branch); err != nil {
		if tip, terr := g.Tip(ctx, branch); terr != nil || tip != "" {
			return err
		}
	}
	return nil
}

// Merge merges branch into the branch checked out in g.Dir with a merge
// commit (--no-ff) and message. When the merge conflicts it is aborted,
// leaving the work tree as it was, and the conflicting paths are returned.
// It aborts only the merge it started: a work tree in the middle of a
// merge, rebase, cherry-pick, revert or bisect is refused, untouched.
// Any other failure is an error with git's whole message (detail): the
// paths in the way, a rejecting hook's own words.
func (g Git) Merge(ctx context.Context, branch, message string) (conflicts []string, err error) {
	if busy, err := g.InProgress(ctx); err != nil || busy != "" {
		return nil, errors.Join(err, inProgressError(busy))
	}
	tip, err := g.commit(ctx, "refs/heads/"+branch)
	if err != nil || tip == "" {
		return nil, errors.Join(err, fmt.Errorf("git merge: there is no branch %s", branch))
	}
	res := g.runMerge(ctx, branch, tip, message)
	if res.Kind == proc.KindOK {
		return nil, nil
	}
	refused := failed("git merge "+branch, res)
	// A merge that stopped before changing anything (paths in the way, a
	// lock) leaves nothing to abort.
	if head, _, err := g.MergeHead(ctx); err != nil || head != tip {
		return nil, errors.Join(refused, err)
	}
	out, derr := g.Output(ctx, "diff", "--name-only", "--diff-filter=U", "-z")
	conflicts = strings.FieldsFunc(out, func(r rune) bool { return r == 0 })
	if _, aerr := g.Output(ctx, "merge", "--abort"); aerr != nil {
		return conflicts, errors.Join(refused, fmt.Errorf("git merge --abort: %w", aerr))
	}
	if derr == nil && len(conflicts) > 0 {
		return conflicts, nil
	}
	return nil, refused // a hook refused the merge commit
}

// AbortMerge aborts a merge left in progress (by a process that died in
// it); without one it does nothing.
func (g Git) AbortMerge(ctx context.Context) error {
	if res := g.Run(ctx, "rev-parse", "-q", "--verify", "MERGE_HEAD"); res.Kind != proc.KindOK {
		return nil
	}
	_, err := g.Output(ctx, "merge", "--abort")
	return err
}

// HoldsMergeOf reports whether g.Dir's index and work tree hold exactly
// what merging commit into HEAD makes, HEAD not having it yet, with
// nothing else changed and no merge in progress: what a git merge killed before its commit (in a
// pre-merge-commit hook) leaves. It needs git merge-tree --write-tree
// (git 2.38); with an older git it is always false.
func (g Git) HoldsMergeOf(ctx context.Context, commit string) (bool, error) {
	res := g.Run(ctx, "merge-tree", "--write-tree", "--no-messages", "HEAD", commit)
	if res.Kind != proc.KindOK {
		return false, nil // conflicts, or an older git
	}
	merged, _, _ := strings.Cut(strings.TrimSpace(string(res.Stdout)), "\n")
	if head, err := g.Output(ctx, "rev-parse", "HEAD^{tree}"); err != nil || head == merged {
		return false, err // merged already
	}
	index, err := g.Output(ctx, "write-tree")
	if err != nil || index != merged {
		return false, nil // unmerged paths, or another tree
	}
	if head, err := g.commit(ctx, "MERGE_HEAD"); err != nil || head != "" {
		return false, err
	}
	res = g.Run(ctx, "diff", "--quiet")
	return res.Kind == proc.KindOK, nil
}

// UndoMerge puts the index and work tree back to HEAD where a merge
// changed them, keeping changes it did not make (git reset --merge).
func (g Git) UndoMerge(ctx context.Context) error {
	_, err := g.Output(ctx, "reset", "-q", "--merge")
	return err
}

// MergeHead returns the commit being merged in g.Dir and the first line of
// the merge's message, or "" when no merge is in progress.
func (g Git) MergeHead(ctx context.Context) (head, message string, err error) {
	if head, err = g.commit(ctx, "MERGE_HEAD"); err != nil || head == "" {
		return "", "", err
	}
	path, err := g.Output(ctx, "rev-parse", "--git-path", "MERGE_MSG")
	if err != nil {
		return "", "", err
	}
	data, err := os.ReadFile(inDir(g.Dir, path))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return "", "", err
	}
	message, _, _ = strings.Cut(string(data), "\n")
	return head, message, nil
}

// An operation git leaves in progress in a work tree, by the file or
// directory that marks it in the git directory.
var operations = []struct{ marker, what, ends string }{
	{"MERGE_HEAD", "a merge", "git merge --continue, or git merge --abort"},
	{"rebase-merge", "a rebase", "git rebase --continue, or git rebase --abort"},
	{"rebase-apply", "a rebase or git am", "git rebase --continue or git am --continue, or their --abort"},
	{"CHERRY_PICK_HEAD", "a cherry-pick", "git cherry-pick --continue, or git cherry-pick --abort"},
	{"REVERT_HEAD", "a revert", "git revert --continue, or git revert --abort"},
	{"sequencer", "a cherry-pick or revert of several commits", "git cherry-pick --continue, or git cherry-pick --abort"},
	{"BISECT_LOG", "a bisect", "git bisect reset"},
}

// InProgress says which operation g.Dir's work tree is in the middle of
// (a merge, a rebase, a cherry-pick, a revert, a bisect) and how to end
// it, or "" when none.
func (g Git) InProgress(ctx context.Context) (string, error) {
	args := []string{"rev-parse"}
	for _, op := range operations {
		args = append(args, "--git-path", op.marker)
	}
	out, err := g.Output(ctx, args...)
	if err != nil {
		return "", err
	}
	for i, path := range strings.Split(out, "\n") {
		if _, err := os.Lstat(inDir(g.Dir, path)); err == nil && i < len(operations) {
			op := operations[i]
			return fmt.Sprintf("%s (%s marks it; end it with %s)", op.what, op.marker, op.ends), nil
		}
	}
	return "", nil
}

// inProgressError refuses to work in a work tree in the middle of
// operation busy (InProgress); nil when it is "".
func inProgressError(busy string) error {
	if busy == "" {
		return nil
	}
	return fmt.Errorf("the work tree is in the middle of %s", busy)
}

// inDir makes a path git printed relative to dir, where it ran, usable
// from here.
func inDir(dir, path string) string {
	if filepath.IsAbs(path) {
		return path
	}
	return filepath.Join(dir, path)
}

// Contains reports whether branch has commit (its tip or an ancestor of
// it); a branch that does not exist has none.
func (g Git) Contains(ctx context.Context, branch, commit string) (bool, error) {
	tip, err := g.Tip(ctx, branch)
	if err != nil || tip == "" {
		return false, err
	}
	res := g.Run(ctx, "merge-base", "--is-ancestor", commit, tip)
	switch {
	case res.Kind == proc.KindOK:
		return true, nil
	case res.Kind == proc.KindExit && res.ExitCode == 1:
		return false, nil
	}
	return false, failed("git merge-base --is-ancestor", res)
}

// MergeCommit is a merge commit on a branch's line of first parents.
type MergeCommit struct {
	Commit  string
	Parents []string // the first is the branch's commit before the merge
	Message string   // whole, without its last newline
}

// Merges lists the merge commits along the first parents of rev (a
// branch, or from..branch for those made since from), newest first.
func (g Git) Merges(ctx context.Context, rev string) ([]MergeCommit, error) {
	out, err := g.Output(ctx, "log", "--merges", "--first-parent", "-z", "--format=%H %P%n%B", rev)
	if err != nil {
		return nil, err
	}
	var merges []MergeCommit
	for _, entry := range strings.Split(out, "\x00") {
		head, msg, _ := strings.Cut(strings.TrimLeft(entry, "\n"), "\n")
		f := strings.Fields(head)
		if len(f) < 3 {
			continue
		}
		merges = append(merges, MergeCommit{Commit: f[0], Parents: f[1:], Message: strings.TrimRight(msg, "\n")})
	}
	return merges, nil
}

// MergedBranches lists the branches matching pattern (a git ref pattern
// such as runner-items/j/*) whose tips the branch into has: they hold
// nothing it lacks.
func (g Git) MergedBranches(ctx context.Context, into, pattern string) ([]string, error) {
	out, err := g.Output(ctx, "branch", "--merged", into, "--list", "--format=%(refname:short)", pattern)
	if err != nil || strings.TrimSpace(out) == "" {
		return nil, err
	}
	return strings.Fields(out), nil
}

// CanMakeBranch returns an error naming git's reason when a ref is in
// the way of branch (refs/heads/a when the branch is a/b, or a/b when it
// is a), which would stop git making it, as it would stop git worktree
// add -B; any other failure (the ref locked a moment by another git) is
// not this check's to report. It makes nothing: a ref transaction
// prepared at commit at, then aborted.
func (g Git) CanMakeBranch(ctx context.Context, branch, at string) error {
	tx := "start\nupdate refs/heads/" + branch + " " + at + "\nprepare\nabort\n"
	res := g.runInput(ctx, strings.NewReader(tx), "update-ref", "--stdin")
	if res.Kind == proc.KindOK {
		return nil
	}
	if why := Message(res); strings.Contains(why, "' exists; cannot create '") {
		// git names the transaction's step ("fatal: prepare: cannot lock
		// ref"), which is not the reason.
		return fmt.Errorf("git update-ref: %s", strings.Replace(why, "fatal: prepare: ", "fatal: ", 1))
	}
	return nil
}

// Tips maps the branches in the directory of branches dir (dir/...) to
// the commits they point at.
func (g Git) Tips(ctx context.Context, dir string) (map[string]string, error) {
	out, err := g.Output(ctx, "for-each-ref", "--format=%(objectname) %(refname)", "refs/heads/"+strings.TrimSuffix(dir, "/"))
	if err != nil {
		return nil, err
	}
	tips := map[string]string{}
	for _, line := range strings.Split(out, "\n") {
		if commit, ref, ok := strings.Cut(line, " "); ok {
			tips[strings.TrimPrefix(ref, "refs/heads/")] = commit
		}
	}
	return tips, nil
}

// CheckBranchName returns git's reason why name cannot be a branch's
// name (git check-ref-format --branch), or nil when it can.
func (g Git) CheckBranchName(ctx context.Context, name string) error {
	res := g.Run(ctx, "check-ref-format", "--branch", name)
	if res.Kind == proc.KindOK {
		return nil
	}
	if res.Kind == proc.KindExit {
		return fmt.Errorf("git refuses %q as a branch name", name)
	}
	return failed("git check-ref-format", res)
}

// BranchesInTheWay lists the branches that are in the way of each of
// names, a branch to make or a directory of branches to make: a branch of
// that name, one named like a directory above it (refs/heads/a is in the
// way of a/b), and any branch below it.
func (g Git) BranchesInTheWay(ctx context.Context, names ...string) ([]string, error) {
	args := []string{"for-each-ref", "--format=%(refname)"}
	for _, n := range names {
		top, _, _ := strings.Cut(n, "/")
		args = append(args, "refs/heads/"+top)
	}
	out, err := g.Output(ctx, args...)
	if err != nil {
		return nil, err
	}
	var in []string
	for _, ref := range strings.Fields(out) {
		b := strings.TrimPrefix(ref, "refs/heads/")
		for _, n := range names {
			if b == n || strings.HasPrefix(n, b+"/") || strings.HasPrefix(b, n+"/") {
				in = append(in, b)
				break
			}
		}
	}
	return in, nil
}

// DeleteBranch deletes branch whatever it holds.
func (g Git) DeleteBranch(ctx context.Context, branch string) error {
	_, err := g.Output(ctx, "branch", "-q", "-D", branch)
	return err
}

// BranchesUnder lists the branches named name or below it (name/...), for
// each of names, sorted by name; none for no names.
func (g Git) BranchesUnder(ctx context.Context, names ...string) ([]string, error) {
	if len(names) == 0 {
		return nil, nil
	}
	args := []string{"for-each-ref", "--format=%(refname:short)"}
	for _, n := range names {
		args = append(args, "refs/heads/"+strings.TrimSuffix(n, "/"))
	}
	out, err := g.Output(ctx, args...)
	if err != nil {
		return nil, err
	}
	return strings.Fields(out), nil
}

// OnlyOn counts the commits of branch that no branch has but those of
// others (branch among them or not): the commits that deleting them all
// would lose.
func (g Git) OnlyOn(ctx context.Context, branch string, others []string) (int, error) {
	args := []string{"rev-list", "--count", "refs/heads/" + branch, "--not"}
	for _, o := range others {
		args = append(args, "--exclude="+o)
	}
	out, err := g.Output(ctx, append(args, "--branches")...)
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(out)
}
