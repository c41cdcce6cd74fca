package workflow

import (
	"fmt"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/runnerdev/runner/workflow/interp"
)

// Validation is a step's validate block (Prodigy's implementation
// validation): after the step's command succeeded, a check reports as JSON
// how complete the work is, and on_incomplete commands fill the gaps until
// it is complete enough.
type Validation struct {
	// Checks run in order after the step's command; the result is the
	// JSON in ResultFile, or the last check's stdout. Empty: the step's
	// own command is the check, and ResultFile holds its result.
	Checks     []ValidationCommand
	ResultFile *interp.Template // relative to the step's directory; nil: stdout
	Threshold  float64          // the completion_percentage that is complete enough, 0..100
	Timeout    time.Duration    // one whole check, all its commands; 0 = none
	// OnIncomplete fills the gaps; nil: an incomplete result fails the
	// step at once.
	OnIncomplete *Incomplete
}

// ValidationCommand is one command of a check or of on_incomplete.
type ValidationCommand struct {
	Command
	CommitRequired bool // the command fails unless it makes a git commit
}

// Incomplete is on_incomplete: its commands run, and the check again,
// until the check is complete or MaxAttempts attempts ran.
type Incomplete struct {
	Commands       []ValidationCommand
	MaxAttempts    int
	FailWorkflow   bool // still incomplete after the attempts: the step fails (else it is recorded and the workflow goes on)
	CommitRequired bool // each attempt's commands together must make a git commit
}

// Defaults of Prodigy's validation page.
const (
	defaultThreshold   = 100
	defaultMaxAttempts = 2
)

// ValidationVar is the namespace of the variables on_incomplete commands
// read: ${validation.completion}, ${validation.gaps}, ...
const ValidationVar = "validation"

var (
	validateKeys          = []string{"shell", "command", "claude", "commands", "result_file", "threshold", "timeout", "on_incomplete"}
	onIncompleteKeys      = []string{"shell", "claude", "commands", "max_attempts", "fail_workflow", "commit_required"}
	validationCommandKeys = []string{"shell", "claude", "commit_required"}
)

// validate reads a step's validate: a mapping, or a list of check
// commands (Prodigy's short form).
func (d *decoder) validate(n *yaml.Node) *Validation {
	v := &Validation{Threshold: defaultThreshold}
	r := d.resolve(n)
	if r == nil {
		return nil
	}
	if r.Kind == yaml.SequenceNode {
		v.Checks = d.validationCommands(r, "validate")
		return v
	}
	f := d.mapping(r, "validate", validateKeys)
	if f == nil {
		return nil
	}
	if d.oneOf(f, "shell", "command"); !f.has("shell") && f.has("command") {
		// Prodigy's ValidationConfig: command is the older spelling of
		// shell.
		f.keys["shell"], f.vals["shell"] = f.keys["command"], f.vals["command"]
	}
	if sh := f.get("shell"); sh != nil && f.get("claude") != nil && f.get("commands") == nil {
		// Prodigy runs the claude check and never the shell one (SPEC
		// §12.4).
		d.warnf(f.key("shell"), "validate.shell beside validate.claude has no effect: only the claude check runs; Prodigy ignores it too")
		delete(f.vals, "shell")
	}
	v.Checks = d.oneCommand(f, "validate")
	if n := f.get("result_file"); n != nil {
		switch text, ok := d.str(n, "validate.result_file"); {
		case !ok:
		case strings.TrimSpace(text) == "":
			d.errorf(n, "validate.result_file is empty")
		default:
			v.ResultFile = d.template(n, "validate.result_file", text)
		}
	}
	if !f.has("result_file") && !givesCommand(f) {
		d.errorf(f.node, "validate needs a check: shell, claude or commands (or a result_file that the step's own command writes)")
	}
	if n := f.get("threshold"); n != nil {
		v.Threshold, _ = d.number(n, "validate.threshold", 0, 100)
	}
	if n := f.get("timeout"); n != nil {
		v.Timeout, _ = d.positive(n, "validate.timeout")
	}
	if n := f.get("on_incomplete"); n != nil {
		v.OnIncomplete = d.onIncomplete(n)
	}
	return v
}

// onIncomplete reads on_incomplete: a mapping, or a list of commands.
// Its commands may read ${validation.*}.
func (d *decoder) onIncomplete(n *yaml.Node) *Incomplete {
	d.onIncompleteCommands = true
	defer func() { d.onIncompleteCommands = false }()
	in := &Incomplete{MaxAttempts: defaultMaxAttempts, FailWorkflow: true}
	r := d.resolve(n)
	if r == nil {
		return nil
	}
	if r.Kind == yaml.SequenceNode {
		in.Commands = d.validationCommands(r, "on_incomplete")
		return in
	}
	f := d.mapping(r, "on_incomplete", onIncompleteKeys)
	if f == nil {
		return nil
	}
	in.Commands = d.oneCommand(f, "on_incomplete")
	if !givesCommand(f) {
		d.errorf(f.node, "on_incomplete needs shell, claude or commands: what fills the gaps the check found")
	}
	if v := f.get("max_attempts"); v != nil {
		in.MaxAttempts, _ = d.integer(v, "on_incomplete.max_attempts", 1)
	}
	if v := f.get("fail_workflow"); v != nil {
		in.FailWorkflow, _ = d.boolean(v, "on_incomplete.fail_workflow")
	}
	if v := f.get("commit_required"); v != nil {
		in.CommitRequired, _ = d.boolean(v, "on_incomplete.commit_required")
	}
	return in
}

// givesCommand reports whether f writes shell, claude or commands, even
// with a value that was reported as wrong.
func givesCommand(f *fields) bool {
	return f.has("shell") || f.has("claude") || f.has("commands")
}

// oneCommand reads the one of shell, claude or commands that f gives
// (what names f in messages); nil when it gives none.
func (d *decoder) oneCommand(f *fields, what string) []ValidationCommand {
	var given []string
	for _, k := range []string{"shell", "claude", "commands"} {
		if f.get(k) != nil {
			given = append(given, k)
		}
	}
	switch {
	case len(given) == 0:
		return nil
	case len(given) > 1:
		d.errorf(f.key(given[1]), "%s takes one of shell, claude or commands, not %s and %s", what, given[0], given[1])
		return nil
	case given[0] == "commands":
		return d.validationCommands(f.get("commands"), what+".commands")
	}
	kind := CommandKind(given[0])
	if c := d.commandText(f.get(given[0]), what+"."+given[0], kind); c.Text != nil {
		return []ValidationCommand{{Command: c}}
	}
	return nil
}

// validationCommands reads a list of {shell | claude, commit_required}.
func (d *decoder) validationCommands(n *yaml.Node, what string) []ValidationCommand {
	items, ok := d.list(n, what)
	if !ok {
		return nil
	}
	if len(items) == 0 {
		d.errorf(n, "%s: empty list of commands", what)
		return nil
	}
	out := make([]ValidationCommand, 0, len(items))
	for i, it := range items {
		item := fmt.Sprintf("%s[%d]", what, i)
		f := d.mapping(it, item, validationCommandKeys)
		if f == nil {
			continue
		}
		var c ValidationCommand
		switch sh, cl := f.get("shell"), f.get("claude"); {
		case sh != nil && cl != nil:
			d.errorf(f.key("claude"), "%s runs one command: shell or claude, not both", item)
		case sh != nil:
			c.Command = d.commandText(sh, item+".shell", ShellCommand)
		case cl != nil:
			c.Command = d.commandText(cl, item+".claude", ClaudeCommand)
		default:
			d.errorf(f.node, "%s needs shell or claude", item)
		}
		if v := f.get("commit_required"); v != nil {
			c.CommitRequired, _ = d.boolean(v, item+".commit_required")
		}
		if c.Text != nil {
			out = append(out, c)
		}
	}
	return out
}

// commandText reads the text of one command of the given kind; its Text is
// nil after an error.
func (d *decoder) commandText(n *yaml.Node, what string, kind CommandKind) Command {
	text, ok := d.str(n, what)
	switch {
	case !ok:
		return Command{Kind: kind}
	case strings.TrimSpace(text) == "":
		d.errorf(n, "%s: empty command", what)
		return Command{Kind: kind}
	}
	return d.command(n, what, text, kind)
}

// noteValidationRefs reports ${validation.*} read where no check has run:
// anywhere but in on_incomplete commands.
func (d *decoder) noteValidationRefs(n *yaml.Node, what string, paths []string) {
	if d.onIncompleteCommands {
		return
	}
	for _, p := range paths {
		if p == ValidationVar || strings.HasPrefix(p, ValidationVar+".") || strings.HasPrefix(p, ValidationVar+"[") {
			d.errorf(n, "%s: ${%s} is set only in the on_incomplete commands of a validate block", what, p)
			return
		}
	}
}
