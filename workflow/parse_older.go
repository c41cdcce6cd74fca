package workflow

import (
	"fmt"
	"strings"

	"gopkg.in/yaml.v3"
)

// Prodigy's older step forms (src/config/command.rs): a bare string step
// and a structured step with only a name are the Claude command /NAME
// (WorkflowCommand::Simple and ::Structured), and test: {command,
// on_failure} is shell: with on_failure (deprecated there too). runner
// runs each as Prodigy does, with a warning that names today's spelling.

// testOutputVar is the variable a test: step sets to its output, as
// Prodigy's ${test.output}.
const testOutputVar = "test.output"

// bareStep reads a bare string step, `- prodigy-lint --strict`: the Claude
// command /prodigy-lint --strict.
func (d *decoder) bareStep(r *yaml.Node, index int) *Step {
	text := strings.TrimPrefix(strings.TrimSpace(r.Value), "/")
	if text == "" {
		d.errorf(r, "step is an empty string: write claude: \"/COMMAND\" or shell: COMMAND")
		return nil
	}
	cmd := "/" + text
	d.warnf(r, "a bare string step is Prodigy's older spelling of the Claude command %s, and runs as one; write claude: %q", cmd, cmd)
	s := newStep(r, index)
	s.Command = Command{Kind: ClaudeCommand, Text: d.template(r, "step", cmd)}
	return s
}

// nameOnly reports whether a step is Prodigy's structured command: a name
// and no command of its own.
func nameOnly(f *fields) bool {
	for _, k := range []string{"shell", "claude", "write_file", "foreach", "test"} {
		if f.has(k) {
			return false
		}
	}
	n := f.get("name")
	return n != nil && n.Kind == yaml.ScalarNode && f.unknown == 0
}

// namedCommand reads a step with only a name (and args): the Claude command
// "/NAME ARG...", as Prodigy's build_command_string makes it
// (src/cook/orchestrator/execution_pipeline.rs): the arguments in order,
// empty ones left out.
func (d *decoder) namedCommand(f *fields) Command {
	name, ok := d.str(f.get("name"), "name")
	if !ok {
		return Command{Kind: ClaudeCommand}
	}
	words := []string{"/" + strings.TrimPrefix(strings.TrimSpace(name), "/")}
	if n := f.get("args"); n != nil {
		items, _ := d.list(n, "args")
		for i, it := range items {
			if arg, ok := d.str(it, fmt.Sprintf("args[%d]", i)); ok && arg != "" {
				words = append(words, arg)
			}
		}
	}
	cmd := strings.Join(words, " ")
	d.warnf(f.get("name"), "a step with only a name is Prodigy's older spelling of the Claude command %s, and runs as one; write claude: %q", cmd, cmd)
	return Command{Kind: ClaudeCommand, Text: d.template(f.get("name"), "name", cmd)}
}

var testKeys = []string{"command", "on_failure"}

// testStep reads Prodigy's deprecated test: {command, on_failure}: the
// shell command, and the on_failure to use, test's own winning over the
// step's as in Prodigy ("test_cmd.on_failure.or(helper.on_failure)").
func (d *decoder) testStep(f *fields) (Command, *yaml.Node) {
	for _, k := range []string{"shell", "claude", "write_file"} {
		if f.has(k) {
			d.errorf(f.key(k), "a step runs one command: test (Prodigy's shell: with on_failure) or %s, not both", k)
		}
	}
	onFailure := f.get("on_failure")
	t := d.mapping(f.get("test"), "test", testKeys)
	if t == nil {
		return Command{Kind: ShellCommand}, onFailure
	}
	if n := t.get("on_failure"); n != nil {
		if onFailure != nil {
			d.warnf(f.key("on_failure"), "on_failure beside test.on_failure has no effect; Prodigy ignores it too")
		}
		onFailure = n
	}
	c := t.get("command")
	if c == nil {
		d.missing(t, t.node, "test needs command: the shell command to run")
		return Command{Kind: ShellCommand}, onFailure
	}
	cmd := d.commandText(c, "test.command", ShellCommand)
	if cmd.Text != nil {
		d.warnf(f.key("test"), "test: is Prodigy's deprecated spelling of shell: with on_failure, and runs as one; write shell: %q (its output is ${%s})", cmd.Text.String(), testOutputVar)
	}
	return cmd, onFailure
}

// analyzeStep reports whether a step is Prodigy's analyze: step (a mapping
// with analyze and no command), which Prodigy parses and never runs; it
// warns once, and the step is left out.
func (d *decoder) analyzeStep(n *yaml.Node) bool {
	m := d.resolve(n)
	if m == nil || m.Kind != yaml.MappingNode {
		return false
	}
	var analyze *yaml.Node
	for i := 0; i+1 < len(m.Content); i += 2 {
		switch k := m.Content[i]; k.Value {
		case "analyze":
			analyze = k
		case "shell", "claude", "foreach", "write_file", "test", "name":
			return false
		}
	}
	if analyze == nil {
		return false
	}
	d.warnf(analyze, "analyze: steps (Prodigy's code analysis) have no effect and are left out; Prodigy parses them and never runs them either")
	return true
}
