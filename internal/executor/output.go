package executor

import (
	"fmt"
	"strings"

	"github.com/runnerdev/runner/workflow"
	"github.com/runnerdev/runner/workflow/interp"
)

// outputLimit is how much of a command's stdout (and stderr) runner keeps
// for ${shell.output}, ${claude.output}, ${ID.output} and ${NAME.stderr}:
// the last 1 MiB. A longer output is not cut silently: reading it fails.
const outputLimit = 1 << 20

// streamTail is the end of one output stream and how long the stream was.
type streamTail struct {
	tail  []byte
	total int64
}

// lastBytes is the last n bytes of b.
func lastBytes(b []byte, n int) []byte { return b[max(len(b)-n, 0):] }

// outputValue is a stream as a variable, its trailing newlines trimmed; a
// stream longer than outputLimit is Unavailable, so that ref (how the
// workflow reads it) fails instead of reading a cut text.
func outputValue(s streamTail, ref string) any {
	if s.total > outputLimit {
		return interp.Unavailable{Reason: fmt.Sprintf(
			"%s: the step printed %s, and runner keeps only the last %s of a step's output: "+
				"write the output to a file in the command (cmd > out.txt) and read the file, or capture it with capture_output: NAME",
			ref, mebibytes(s.total), mebibytes(outputLimit))}
	}
	return strings.TrimRight(string(s.tail), "\r\n")
}

func mebibytes(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }

// setOutput sets ${shell.output} or ${claude.output}, and
// ${last.output}, to the stdout of the step's last command, whether or
// not the step captures it, and ${last.exit_code} to its exit code. These
// are not journaled (a resumed job marks them: ResumedOutput).
func setOutput(step *workflow.Step, res commandResult, sc *Scope) {
	kind := string(step.Command.Kind)
	if step.Command.Kind != workflow.ShellCommand && step.Command.Kind != workflow.ClaudeCommand {
		return // write_file and foreach steps print nothing of their own
	}
	sc.SetIn(kind, "output", outputValue(res.stdoutTail, "${"+kind+".output}"))
	sc.SetIn("last", "output", outputValue(res.stdoutTail, "${last.output}"))
	sc.SetIn("last", "exit_code", res.ExitCode)
}

// ResumedOutput marks ${shell.output} or ${claude.output} of a step that
// finished before the job was resumed: its output is not in the journal,
// and a reference to it fails rather than reading an empty text.
func ResumedOutput(step *workflow.Step, phase string, sc *Scope) {
	kind := string(step.Command.Kind)
	for _, ns := range []string{kind, "last"} {
		sc.SetIn(ns, "output", interp.Unavailable{Reason: fmt.Sprintf(
			"${%s.output}: step %q finished before the job was resumed, and runner does not keep a step's output across a resume: "+
				"give the step capture_output: NAME (or an id) and read ${NAME}", ns, step.Label(phase))})
	}
}

// StartItemOutputs marks ${shell.output} and ${claude.output} in a map
// item's scope as not yet set: an item reads the outputs of its own steps
// only, whether it runs in the job's process (which ran setup) or in an
// agent process (which did not), and a first step that reads one fails
// with a reason instead of reading setup's.
func StartItemOutputs(sc *Scope) {
	for _, kind := range []workflow.CommandKind{workflow.ShellCommand, workflow.ClaudeCommand} {
		sc.SetIn(string(kind), "output", interp.Unavailable{Reason: fmt.Sprintf(
			"${%s.output}: no %s step of this item has run yet, and an item does not see setup's output: capture it in setup (capture_output: NAME) and read ${NAME}", kind, kind)})
	}
}

// skippedVars sets the variables of a step with an id that its when
// skipped: reading ${ID.output}, ${ID.exit_code} or ${ID.success} fails
// with the reason, rather than reaching the shell as a "Bad substitution".
func skippedVars(step *workflow.Step, sc *Scope) map[string]any {
	if step.ID == "" {
		return nil
	}
	u := interp.Unavailable{Reason: fmt.Sprintf("step %q was skipped (when: %s): it has no output, exit_code or success", step.ID, step.When.Source)}
	vars := map[string]any{"steps." + step.ID: map[string]any{"output": u, "exit_code": u, "success": u}}
	sc.Apply(vars)
	return vars
}
