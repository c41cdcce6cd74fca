package workflow

import (
	"fmt"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/runnerdev/runner/workflow/interp"
)

// foreachKeys are the keys of a step's foreach: mapping. Prodigy's foreach
// page names the items foreach:, its command-types page items:; runner
// takes either.
var foreachKeys = []string{"foreach", "items", "do", "parallel", "continue_on_error", "max_items"}

// maxLoopNesting bounds loops in the do of loops: far more than a
// workflow needs, and few enough that a file cannot make validation
// (which names each step by its path) slow.
const maxLoopNesting = 8

// foreachStepRefuses are the step keys that mean nothing on a foreach
// step, with what to write instead.
var foreachStepRefuses = []struct{ keys, instead string }{
	{"shell claude", "move it into do, or make it a step of its own"},
	{"env", "set it on those steps, or in the workflow's env"},
	{"capture_output capture_format capture_streams", "capture in those steps, or give the foreach an id and read ${steps.ID.output}, what they printed"},
}

// foreachStep reads the foreach: of a step that has one into s and
// reports whether it did; the step's other keys are read as for any step.
func (d *decoder) foreachStep(f *fields, what string, s *Step) bool {
	if !f.has("foreach") {
		return false
	}
	for _, r := range foreachStepRefuses {
		for _, k := range strings.Fields(r.keys) {
			if f.has(k) {
				d.errorf(f.key(k), "%s does not apply to a foreach step, which runs the steps of its do: %s", k, r.instead)
			}
		}
	}
	empty, _ := interp.Parse("")
	s.Command = Command{Kind: ForeachCommand, Text: empty}
	s.Foreach = &Foreach{Parallel: 1}
	m := d.mappingNode(f.vals["foreach"], "foreach", "a mapping such as {foreach: [a, b], do: [{shell: ...}]}")
	if m == nil {
		return true
	}
	if d.loops == maxLoopNesting {
		d.errorf(f.key("foreach"), "foreach: loops nest at most %d deep", maxLoopNesting)
		return true
	}
	loop := d.mapping(m, "foreach", foreachKeys)
	if loop == nil {
		return true
	}
	what += ".foreach"
	if items := d.oneOf(loop, "foreach", "items"); items != nil {
		s.Foreach.Items, s.Command.Text = d.foreachItems(items, s.Command.Text)
	} else {
		d.errorf(loop.node, "foreach needs foreach: the items, a list or a shell command that prints one item per line")
	}
	if v := loop.get("parallel"); v != nil {
		s.Foreach.Parallel = d.foreachParallel(v)
	}
	if v := loop.get("continue_on_error"); v != nil {
		s.Foreach.ContinueOnError, _ = d.boolean(v, "foreach.continue_on_error")
	}
	if v := loop.get("max_items"); v != nil {
		s.Foreach.MaxItems, _ = d.integer(v, "foreach.max_items", 1)
	}
	if v := loop.get("do"); v != nil {
		outer, at := d.doOf, d.at
		d.doOf = &at
		d.loops++
		s.Foreach.Do = d.stepList(v, what+".do", true)
		d.loops--
		d.doOf = outer
	} else {
		d.errorf(loop.node, "foreach needs do: the steps to run for each item")
	}
	if s.Foreach.Parallel > 1 {
		d.sharedWorkTree(s.Foreach.Do, "the items of a parallel foreach", "use parallel: false, or a MapReduce workflow with isolation: worktree")
	}
	return true
}

// foreachItems reads the items: a list of strings, or a shell command
// (returned as the template that replaces cmd).
func (d *decoder) foreachItems(n *yaml.Node, cmd *interp.Template) ([]string, *interp.Template) {
	r := d.resolve(n)
	if r == nil {
		return nil, cmd
	}
	if r.Kind == yaml.SequenceNode {
		items := make([]string, 0, len(r.Content))
		for i, it := range r.Content {
			if v, ok := d.str(it, fmt.Sprintf("foreach.foreach[%d]", i)); ok {
				items = append(items, v)
			}
		}
		return items, cmd
	}
	text, ok := d.str(r, "foreach.foreach")
	switch {
	case !ok:
	case strings.TrimSpace(text) == "":
		d.errorf(r, "foreach.foreach is empty: give a list of items or a shell command that prints them")
	default:
		if t := d.template(r, "foreach.foreach", text); t != nil {
			d.noteForWords(r, t)
			return nil, t
		}
	}
	return nil, cmd
}

// foreachParallel reads parallel: false (one item at a time), true
// (ForeachDefaultParallel) or a number of items at once.
func (d *decoder) foreachParallel(n *yaml.Node) int {
	r := d.resolve(n)
	switch {
	case r == nil:
		return 1
	case r.Kind == yaml.ScalarNode && r.ShortTag() == "!!bool":
		if on, _ := d.boolean(r, "foreach.parallel"); on {
			return ForeachDefaultParallel
		}
		return 1
	case r.Kind != yaml.ScalarNode || r.ShortTag() != "!!int":
		d.errorf(r, "foreach.parallel must be true, false or how many items run at once, not %s", describe(r))
		return 1
	}
	v, ok := d.integer(r, "foreach.parallel", 1)
	if !ok {
		return 1
	}
	return v
}

// sharedWorkTree reports steps that check git commits among steps that
// run at once (who, with what to do instead): they share one work tree,
// so a commit cannot be told to be one's rather than another's.
func (d *decoder) sharedWorkTree(steps []*Step, who, instead string) {
	for s := range AllSteps(steps) {
		if s.TracksCommits() {
			d.errorf(&yaml.Node{Line: s.Pos.Line, Column: s.Pos.Col}, "commit_required and auto_commit cannot be told apart between %s (they share one work tree): %s", who, instead)
		}
	}
}

// canReadAcross is canRead between two lists of steps when one is the do
// of a foreach: a do step reads what its foreach step reads, and the
// earlier steps of its own do; the variables a do step sets live in its
// item's scope only.
func canReadAcross(from, to stepAt) string {
	for at := from.outer; at != nil; at = at.outer {
		if at.phase == to.phase {
			return canRead(*at, to)
		}
	}
	if to.outer != nil {
		return "it is a step of a foreach's do, set for the later steps of the same do only"
	}
	for from.outer != nil {
		from = *from.outer
	}
	return canRead(from, to)
}
