package executor

import (
	"fmt"
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
// file gave it once expanded, and its size.
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
	if cmd.Write.CreateDirs {
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return path, 0, err
		}
	}
	if err := os.WriteFile(full, data, cmd.Write.Mode); err != nil {
		return path, 0, err
	}
	// WriteFile's mode is cut by the umask and left alone on a file that
	// existed: the file ends with the mode the workflow asked for.
	if err := os.Chmod(full, cmd.Write.Mode); err != nil {
		return path, 0, err
	}
	return path, len(data), nil
}
