package executor

import (
	"strings"

	"github.com/runnerdev/runner/internal/proc"
	"github.com/runnerdev/runner/workflow"
	"github.com/runnerdev/runner/workflow/interp"
)

// When a shell step's command runs without /bin/sh, as WithoutShell
// tells it.
const (
	// NoShellAlways: the command is a plain list of words (proc.Words)
	// with no placeholder.
	NoShellAlways = "always"
	// NoShellPlainValues: the command is a plain list of words once its
	// placeholders are filled in, as long as their values need no more
	// than the single quotes runner puts around each (no ' of their own).
	NoShellPlainValues = "plain_values"
)

// WithoutShell says whether cmd runs without /bin/sh (NoShellAlways or
// NoShellPlainValues) or under it (""), for the dry run and -v: proc
// decides again on each run, from the command as interpolated. A bare
// $NAME, which runner may leave to the shell, keeps it under sh here.
func WithoutShell(cmd workflow.Command) string {
	if cmd.Kind != workflow.ShellCommand {
		return ""
	}
	src := cmd.Text.String()
	if strings.Count(src, "$") != strings.Count(src, "${") {
		return ""
	}
	text, err := cmd.Text.Expand(func(string) (any, bool) { return "v", true }, interp.Shell)
	switch {
	case err != nil || !proc.Direct(text):
		return ""
	case text == src:
		return NoShellAlways
	}
	return NoShellPlainValues
}
