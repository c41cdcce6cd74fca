package workflow

import (
	"fmt"
	"slices"
	"strings"

	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/vm"
	"gopkg.in/yaml.v3"
)

// stepAt is where a step stands, or where a value that reads
// ${steps.ID...} is: a phase and the index of the step in it.
type stepAt struct {
	phase string // commands, setup, agent_template, reduce, merge; env and map.* outside steps
	index int
	outer *stepAt // a foreach's do steps: where the foreach step stands; nil for the others
	group int     // the steps of a parallel: block: its first step's index + 1; 0 for the others
	// ran is set in a step's on_success and on_failure handlers, which
	// run once the step's command ran and set its variables.
	ran bool
}

// stepRef is a read of a step's variables, checked once every id is known.
type stepRef struct {
	pos   Pos // of the reference: in a value of several lines, its own line
	what  string
	id    string
	at    stepAt
	field string // Prodigy's ${ID.field} or ${NAME.field}; "" for ${steps.ID...}
}

// noteRefs records the step ids that paths (as Template.Refs gives them)
// read through steps.ID, and Prodigy's short paths ${X.field}.
func (d *decoder) noteRefs(n *yaml.Node, what string, paths []string) {
	for _, p := range paths {
		rest, ok := strings.CutPrefix(p, "steps.")
		if !ok {
			if name, field, ok := shortPath(p); ok {
				d.refs = append(d.refs, stepRef{pos: d.refPos(n, p), what: what, id: name, at: d.at, field: field})
			}
			continue
		}
		id := rest
		if i := strings.IndexAny(rest, ".["); i >= 0 {
			id = rest[:i]
		}
		d.refs = append(d.refs, stepRef{pos: d.refPos(n, p), what: what, id: id, at: d.at})
	}
}

// spelling is how the reference names the step: steps.ID or ${ID.field}.
func (r stepRef) spelling() string {
	if r.field != "" {
		return "${" + r.id + "." + r.field + "}"
	}
	return "steps." + r.id
}

// refPos is where the placeholder of path is in n: in a value of several
// lines (a block scalar, shell: |), the file position of its ${, so that
// the error points at the line that holds it; else the value's position.
func (d *decoder) refPos(n *yaml.Node, path string) Pos {
	if !strings.Contains(n.Value, "\n") {
		return pos(n)
	}
	if i := strings.Index(n.Value, "${"+path); i >= 0 {
		return d.scalarPos(n, i)
	}
	return pos(n)
}

// noteExprRefs records the steps.ID (or steps["ID"]) reads of a
// condition, and whether it reads a git-context variable.
func (d *decoder) noteExprRefs(n *yaml.Node, what string, prog *vm.Program) {
	root := prog.Node()
	ast.Walk(&root, refVisitor(func(ns, name string) {
		switch {
		case ns == "steps":
			d.refs = append(d.refs, stepRef{pos: pos(n), what: what, id: name, at: d.at})
		case (ns == "workflow" || ns == "step") && slices.Contains(gitContextNames, name):
			d.readsGitContext = true
		case ns == "map" && isResults(name):
			d.readsResults = true
		}
	}))
}

// refVisitor calls itself with each NS.NAME (or NS["NAME"]) an
// expression reads.
type refVisitor func(ns, name string)

func (v refVisitor) Visit(node *ast.Node) {
	m, ok := (*node).(*ast.MemberNode)
	if !ok {
		return
	}
	if ns, ok := m.Node.(*ast.IdentifierNode); ok {
		if name, ok := m.Property.(*ast.StringNode); ok {
			v(ns.Value, name.Value)
		}
	}
}

// checkRefs reports reads of steps that do not exist, or whose variables
// are not set where they are read: a later step, the step itself (set when
// it succeeds), or a phase the reader cannot see.
func (d *decoder) checkRefs() {
	for _, r := range d.refs {
		if r.field != "" && d.checkShortRef(r) {
			continue
		}
		to, ok := d.stepsAt[r.id]
		if !ok {
			msg := fmt.Sprintf("%s: no step has id %q", r.what, r.id)
			var visible []string
			for id, at := range d.stepsAt {
				if why := canRead(r.at, at); why == "" {
					visible = append(visible, id)
				}
			}
			if s := nearest(r.id, visible); s != "" {
				msg += fmt.Sprintf(" (did you mean %q?)", s)
			}
			d.errorAt(r.pos, "%s", msg)
			continue
		}
		if why := canRead(r.at, to); why != "" {
			d.errorAt(r.pos, "%s: %s is not set here: %s (line %d)", r.what, r.spelling(), why, d.ids[r.id].Line)
		}
	}
}

// canRead returns why a value at from cannot read the variables of the
// step at to, or "".
func canRead(from, to stepAt) string {
	if from.phase != to.phase && (from.outer != nil || to.outer != nil) {
		return canReadAcross(from, to)
	}
	switch {
	case from.phase == to.phase && from.group != 0 && from.group == to.group && from.index != to.index:
		return "it runs at the same time, in the same parallel: block (steps after the block read it)"
	case from.phase == to.phase && to.index < from.index:
		return ""
	case from.phase == to.phase && to.index == from.index && from.ran:
		return ""
	case from.phase == to.phase && to.index == from.index:
		return "a step's own steps.ID is set only once it has succeeded"
	case from.phase == to.phase:
		return "that step runs later"
	case to.phase == "setup" && from.phase != "env":
		return "" // map, reduce and merge run after setup, in its scope
	case (to.phase == "reduce" || to.phase == "commands") && from.phase == "merge":
		return "" // merge runs after reduce (or a standard workflow's commands), in its scope
	case from.phase == "env":
		return "the workflow env is read before any step runs"
	case to.phase == "agent_template" && from.phase == "reduce":
		return "agent_template steps run once per item, in the item's own scope (reduce reads them through ${map.results})"
	case to.phase == "agent_template":
		return "agent_template steps run once per item, in the item's own scope"
	}
	return fmt.Sprintf("%s runs after %s", to.phase, from.phase)
}

// nearest returns the id closest to id within two edits (one for ids
// shorter than 5), or "".
func nearest(id string, ids []string) string {
	best, bestDist := "", 2
	if len(id) >= 5 {
		bestDist = 3
	}
	for _, k := range ids {
		if dist := editDistance(id, k); dist < bestDist || dist == bestDist && k < best {
			best, bestDist = k, dist
		}
	}
	return best
}
