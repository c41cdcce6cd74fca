package executor

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/runnerdev/runner/retryv2"
	"github.com/runnerdev/runner/workflow"
	"github.com/runnerdev/runner/workflow/interp"
)

// writeFile runs a write_file command once: runner writes the file itself,
// with no shell and no process. Path and content are expanded as they are
// (no shell reads them); json and yaml content is checked and laid out
// again; a relative path is in the step's directory (the job's or the
// item's worktree, then working_dir).
func (x *Executor) writeFile(step *workflow.Step, cmd workflow.Command, r Run, attempt int) commandResult {
	start := time.Now()
	path, size, err := x.write(step, cmd, r, attempt)
	out := retryv2.Outcome{Attempt: attempt, Duration: time.Since(start)}
	if err != nil {
		out.Kind, out.ExitCode, out.Err = retryv2.KindSpawn, -1, fmt.Errorf("write_file: %w", err)
		return commandResult{Outcome: out}
	}
	line := x.mask(fmt.Sprintf("wrote %d bytes to %s (%s)\n", size, path, cmd.Write.Format))
	fmt.Fprint(r.stdout(x), line)
	return commandResult{Outcome: out}
}

// write expands, checks and writes the file, and returns its path as the
// file gave it once expanded, and its size. A path whose directory
// resolves outside the tree the step may write (writeRoot) is refused
// unless the workflow author wrote it absolute: a value (an item, an
// agent's symlink) cannot send the file elsewhere.
func (x *Executor) write(step *workflow.Step, cmd workflow.Command, r Run, attempt int) (string, int, error) {
	lookup := r.Scope.PlainLookup()
	path, err := cmd.Text.Expand(lookup, interp.Plain)
	if err != nil {
		return "", 0, fmt.Errorf("interpolation: path: %w", err)
	}
	content, err := cmd.Write.Content.Expand(lookup, interp.Plain)
	if err != nil {
		return path, 0, fmt.Errorf("interpolation: content: %w", err)
	}
	data, err := cmd.Write.Render(content)
	if err != nil {
		return path, 0, err
	}
	_, dir, err := x.stepEnv(step, r, attempt, nil)
	if err != nil {
		return path, 0, err
	}
	full := path
	if dir != "" && !filepath.IsAbs(path) {
		full = filepath.Join(dir, path)
	}
	if !filepath.IsAbs(cmd.Text.String()) {
		if err := checkInside(full, writeRoot(r.Dir, dir)); err != nil {
			return path, 0, err
		}
	}
	if cmd.Write.CreateDirs {
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return path, 0, err
		}
	}
	return path, len(data), replaceFile(full, data, cmd.Write.Mode)
}

// writeRoot is the directory tree a write_file step may write with a
// path it did not write absolute: the run's directory (the job's or the
// item's worktree) when the step's directory is in it, else the step's
// directory (working_dir, or the directory runner runs in).
func writeRoot(runDir, stepDir string) string {
	if runDir != "" {
		if rel, err := filepath.Rel(runDir, stepDir); err == nil && filepath.IsLocal(rel) {
			return runDir
		}
	}
	return cmp.Or(stepDir, ".")
}

// checkInside refuses path when its directory, symlinks resolved, is
// not root or below it (also resolved).
func checkInside(path, root string) error {
	resolvedRoot, err := resolveExisting(root)
	if err != nil {
		return err
	}
	parent, err := resolveExisting(filepath.Dir(path))
	if err != nil {
		return err
	}
	if rel, err := filepath.Rel(resolvedRoot, parent); err != nil || !filepath.IsLocal(rel) {
		return fmt.Errorf("%s is outside %s, the directory the step writes in (its directory is %s): write the path absolute in the workflow to write there", path, root, parent)
	}
	return nil
}

// resolveExisting makes path absolute and resolves the symlinks of its
// longest part that exists; the rest, not there yet, is joined as it is.
func resolveExisting(path string) (string, error) {
	path, err := filepath.Abs(path)
	if err != nil {
		return "", err
	}
	var rest []string
	for {
		resolved, err := filepath.EvalSymlinks(path)
		if err == nil {
			return filepath.Join(append([]string{resolved}, rest...)...), nil
		}
		parent := filepath.Dir(path)
		if !errors.Is(err, fs.ErrNotExist) || parent == path {
			return "", err
		}
		rest = append([]string{filepath.Base(path)}, rest...)
		path = parent
	}
}

// replaceFile writes data to path through a new file in its directory,
// renamed over path: a symlink at path is replaced, never followed, and
// a reader sees the old content or the new, never a part. The file gets
// mode whatever the umask.
func replaceFile(path string, data []byte, mode fs.FileMode) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	err = f.Chmod(mode)
	if err == nil {
		_, err = f.Write(data)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		_ = os.Remove(f.Name())
	}
	return err
}
