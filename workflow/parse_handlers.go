package workflow

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// fixLoop reads the fix-and-retry fields of an on_failure mapping:
// max_attempts (alias max_retries) and commit_required. Its on_success is
// read with the step's other handlers, once the step has its name.
func (d *decoder) fixLoop(f *fields, fl *Failure) {
	if v := d.oneOf(f, "max_attempts", "max_retries"); v != nil {
		fl.MaxAttempts, _ = d.integer(v, "on_failure.max_attempts", 1)
	}
	if v := f.get("commit_required"); v != nil {
		fl.CommitRequired, _ = d.boolean(v, "on_failure.commit_required")
	}
	d.failureOnSuccess = f.get("on_success")
}

// handlers names the step s in events when it is a handler's step, and
// reads its on_success and on_exit_code handlers and its on_failure
// handler's on_success.
func (d *decoder) handlers(f *fields, s *Step, what string) {
	s.Path, d.handlerPath = d.handlerPath, ""
	if n := d.failureOnSuccess; n != nil {
		d.failureOnSuccess = nil
		s.OnFailure.OnSuccess = d.handlerSteps(n, what+".on_failure.on_success", s.Key()+".on_failure.on_success", s.Index)
	}
	if n := f.get("on_success"); n != nil {
		outer := d.at
		d.at.ran = true
		s.OnSuccess = d.handlerSteps(n, what+".on_success", s.Key()+".on_success", s.Index)
		d.at = outer
	}
	n := f.get("on_exit_code")
	if n == nil {
		return
	}
	m := d.mappingNode(n, "on_exit_code", "a mapping of exit codes to handlers, such as {0: \"echo done\", 101: {claude: /fix}}")
	if m == nil {
		return
	}
	es, ok := d.entries(m, "on_exit_code")
	if !ok {
		return
	}
	s.OnExitCode = map[int][]*Step{}
	for _, e := range es {
		code, err := strconv.Atoi(e.key.Value)
		if err != nil || code < 0 || code > 255 {
			d.errorf(e.key, "on_exit_code: %q is not an exit code (a whole number from 0 to 255)", e.key.Value)
			continue
		}
		at := fmt.Sprintf(".on_exit_code.%d", code)
		if steps := d.handlerSteps(e.val, what+at, s.Key()+at, s.Index); steps != nil {
			s.OnExitCode[code] = steps
		}
	}
}

// handlerSteps reads a handler: a command, a list of commands or steps,
// {commands: [...]}, or one step with all a step's keys (its own
// on_success, on_failure...). A command is a shell command.
func (d *decoder) handlerSteps(n *yaml.Node, what, path string, index int) []*Step {
	r := d.resolve(n)
	switch {
	case r == nil:
		return nil
	case r.Kind == yaml.SequenceNode:
		if len(r.Content) == 0 {
			d.errorf(r, "%s: empty list of commands", what)
		}
		var steps []*Step
		for i, it := range r.Content {
			if s := d.handlerStep(it, fmt.Sprintf("%s[%d]", what, i), fmt.Sprintf("%s[%d]", path, i), index); s != nil {
				steps = append(steps, s)
			}
		}
		return steps
	case r.Kind == yaml.MappingNode && hasKey(r, "commands"):
		f := d.mapping(r, what, []string{"commands"})
		if c := f.get("commands"); c != nil {
			return d.handlerSteps(c, what+".commands", path, index)
		}
		d.errorf(r, "%s.commands: empty list of commands", what)
		return nil
	}
	if s := d.handlerStep(r, what, path, index); s != nil {
		return []*Step{s}
	}
	return nil
}

// handlerStep reads one step of a handler; a plain string is the shell
// command of a step.
func (d *decoder) handlerStep(n *yaml.Node, what, path string, index int) *Step {
	if r := d.resolve(n); r != nil && r.Kind == yaml.ScalarNode {
		text, ok := d.str(r, what)
		if !ok {
			return nil
		}
		if strings.TrimSpace(text) == "" {
			d.errorf(r, "%s: empty command", what)
			return nil
		}
		key := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: "shell", Line: r.Line, Column: r.Column}
		n = &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Line: r.Line, Column: r.Column, Content: []*yaml.Node{key, r}}
	}
	outer := d.handlerPath
	d.handlerPath = path
	s := d.step(n, what, index)
	d.handlerPath = outer
	return s
}

// hasKey reports whether the mapping m writes key.
func hasKey(m *yaml.Node, key string) bool {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return true
		}
	}
	return false
}

// changesRepository reports whether the step or its on_failure handler
// runs a claude: command or must commit (AllSteps yields the steps of its
// other handlers).
func (s *Step) changesRepository() bool {
	if s.Command.Kind == ClaudeCommand || s.CommitRequired || s.OnFailure.CommitRequired {
		return true
	}
	return slices.ContainsFunc(s.OnFailure.Commands, func(c Command) bool { return c.Kind == ClaudeCommand })
}
