package workflow

import (
	"fmt"

	"gopkg.in/yaml.v3"
)

// parallelKeys are the keys of a parallel: block.
var parallelKeys = []string{"parallel", "max_parallel", "fail_fast", "name"}

// parallelKey returns the parallel key of n when n is a parallel: block
// (a mapping that writes parallel:), else nil.
func (d *decoder) parallelKey(n *yaml.Node) *yaml.Node {
	r := d.resolve(n)
	if r == nil || r.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(r.Content); i += 2 {
		if r.Content[i].Value == "parallel" {
			return r.Content[i]
		}
	}
	return nil
}

// noParallel is why a parallel: block cannot stand where the decoder
// reads, or "" where it can: in the list of steps of commands, setup,
// reduce and merge.
func (d *decoder) noParallel(phase string) string {
	switch {
	case d.handlerPath != "":
		return "parallel: is a form of a phase's steps, not of a handler's: make the handler a step of its own, or put the steps in a parallel: block of the phase"
	case d.doOf != nil:
		return "parallel: is not allowed in a foreach's do: set the foreach's parallel: to run its items at once"
	case d.inParallel:
		return "parallel: blocks do not nest: list every step in the one block"
	case phase == "agent_template":
		return "parallel: is not allowed in a map's agent_template: the items already run at once (map.max_parallel); run the steps one after another, or in a foreach with parallel:"
	}
	return ""
}

// parallelSteps reads the parallel: block n, what in the file, whose
// first step is the phase's step first: its steps, each pointing at the
// block, and how many numbers of steps it takes (at least 1).
func (d *decoder) parallelSteps(n *yaml.Node, what, phase string, first int) ([]*Step, int) {
	f := d.mapping(n, what, parallelKeys)
	if f == nil {
		return nil, 1
	}
	p := &Parallel{Pos: pos(f.node), FailFast: true, First: first}
	if v := f.get("name"); v != nil {
		p.Name, _ = d.str(v, what+".name")
	}
	if v := f.get("max_parallel"); v != nil {
		p.MaxParallel, _ = d.integer(v, what+".max_parallel", 1)
	}
	if v := f.get("fail_fast"); v != nil {
		p.FailFast, _ = d.boolean(v, what+".fail_fast")
	}
	items, ok := d.list(f.get("parallel"), what+".parallel")
	if ok && len(items) == 0 {
		d.errorf(f.vals["parallel"], "%s.parallel is empty: list the steps to run at once", what)
	}
	p.Count = len(items)
	var steps []*Step
	captures := map[string]*Step{}
	outer := d.at
	d.inParallel = true
	for j, it := range items {
		d.at = stepAt{phase: phase, index: first + j, group: first + 1}
		inner := fmt.Sprintf("%s.parallel[%d]", what, j)
		d.inOrigin(it, func() {
			s := d.step(it, inner, first+j)
			if s == nil {
				return
			}
			s.Parallel = p
			steps = append(steps, s)
			if other, ok := captures[s.Capture]; ok && s.Capture != "" {
				d.errorf(captureKey(d.resolve(it)), "%s: %s captures %s as %s (line %d) does, and they run at the same time: give each its own name", inner, s.Label(phase), s.Capture, other.Label(phase), other.Pos.Line)
			} else if s.Capture != "" {
				captures[s.Capture] = s
			}
		})
	}
	d.inParallel = false
	d.at = outer
	d.sharedWorkTree(steps, "the steps of a parallel: block", "take the step out of the block")
	return steps, max(p.Count, 1)
}

// captureKey is the key of the mapping m that makes its step capture,
// else m itself (a test: step's ${test.output}).
func captureKey(m *yaml.Node) *yaml.Node {
	for i := 0; m != nil && i+1 < len(m.Content); i += 2 {
		if k := m.Content[i].Value; k == "capture" || k == "capture_output" {
			return m.Content[i]
		}
	}
	return m
}

// checkSiblingCaptures reports a ${NAME} read in a step of a parallel:
// block of a name another step of the same block captures: the two run
// at the same time, so the reader never sees the value.
func (d *decoder) checkSiblingCaptures() {
	for _, r := range d.plainRefs {
		if r.at.group == 0 {
			continue
		}
		for _, c := range d.short.captures[r.name] {
			if c.at.phase == r.at.phase && c.at.group == r.at.group && c.at.index != r.at.index {
				d.errorAt(r.pos, "%s: another step of the same parallel: block captures it, and they run at the same time (steps after the block read it)", r.written)
			}
		}
	}
}
