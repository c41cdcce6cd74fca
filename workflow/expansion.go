package workflow

import (
	"gopkg.in/yaml.v3"
)

// maxNodes bounds the values one file may expand to through its aliases,
// so that an alias bomb (billion laughs) is an error instead of an
// exhausted machine.
const maxNodes = 200_000

// maxDepth bounds how deep a file's values nest once its aliases are
// expanded: far deeper than a workflow goes (Prodigy's YAML reader stops
// at 128), and shallow enough that a file of nested handlers cannot make
// validation, which names each step by its path, slow.
const maxDepth = 512

// expansion is what a node grows to once its aliases are followed.
type expansion struct{ nodes, depth int }

// checkExpansion reports, positioned at the alias, an alias inside the
// value it names (a cycle: its expansion never ends), and a document
// whose aliases expand it past maxNodes values or maxDepth levels. It
// visits each node of the file once, whatever its aliases expand to, so
// that everything read after it (composition, the decoder) walks a
// finite tree of a bounded size. It records the document's expanded
// size in d.nodes and reports whether it found no error.
func (d *decoder) checkExpansion(root *yaml.Node) bool {
	c := expander{d: d, done: map[*yaml.Node]expansion{}, open: map[*yaml.Node]bool{}}
	e, ok := c.walk(root, 1)
	d.nodes = e.nodes
	return ok
}

type expander struct {
	d    *decoder
	done map[*yaml.Node]expansion // nodes whose expansion is known
	open map[*yaml.Node]bool      // the nodes on the path walked, for cycles
}

// walk returns n's expansion; depth is where n stands in the expanded
// tree.
func (c *expander) walk(n *yaml.Node, depth int) (expansion, bool) {
	if n.Kind == yaml.AliasNode {
		switch {
		case n.Alias == nil:
			c.d.errorf(n, "alias *%s names no anchor", n.Value)
			return expansion{}, false
		case c.open[n.Alias]:
			c.d.errorf(n, "alias *%s is inside the value it names (&%s at line %d): a cycle that never ends", n.Value, n.Value, n.Alias.Line)
			return expansion{}, false
		}
		return c.walk(n.Alias, depth)
	}
	if e, ok := c.done[n]; ok {
		if depth+e.depth-1 > maxDepth {
			c.d.errorf(n, "values nest more than %d levels deep here (through aliases?)", maxDepth)
			return expansion{}, false
		}
		return e, true
	}
	if depth > maxDepth {
		c.d.errorf(n, "values nest more than %d levels deep here (through aliases?)", maxDepth)
		return expansion{}, false
	}
	c.open[n] = true
	defer delete(c.open, n)
	e := expansion{nodes: 1, depth: 1}
	for _, ch := range n.Content {
		sub, ok := c.walk(ch, depth+1)
		if !ok {
			return expansion{}, false
		}
		e.nodes += sub.nodes
		e.depth = max(e.depth, sub.depth+1)
		if e.nodes > maxNodes {
			c.d.errorf(n, "this value expands to more than %d values through its aliases (an alias bomb?)", maxNodes)
			return expansion{}, false
		}
	}
	c.done[n] = e
	return e, true
}
