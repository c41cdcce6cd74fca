package workflow

import (
	"slices"

	"gopkg.in/yaml.v3"

	"github.com/runnerdev/runner/workflow/compose"
)

// compose builds a standard workflow that uses Prodigy's composition
// (imports, extends, template, parameters) with the compose package and
// returns its composed top-level mapping, or nil after errors, which are
// positioned in the file where each is. The composed document becomes
// wf.Composed, the copy a job stores.
func (d *decoder) compose(root *yaml.Node, wf *Workflow) *yaml.Node {
	res := compose.Compose(&compose.Source{File: d.file, Src: d.src, Root: root, Nodes: d.nodes},
		compose.Options{Load: loadComposed, Params: d.params, MaxNodes: maxNodes})
	for _, p := range res.Problems {
		var pe ParseErrors
		switch {
		case p.Err != nil && asParseErrors(p.Err, &pe):
			d.errs = append(d.errs, pe...)
		case p.Err != nil:
			d.errs = append(d.errs, &ParseError{File: p.File, Pos: Pos{Line: 1, Col: 1}, Msg: p.Err.Error()})
		default:
			d.warnsOrErrs(p)
		}
	}
	if res.Root == nil {
		return nil
	}
	d.origins = res.Origins
	composed, err := yaml.Marshal(res.Root)
	if err != nil {
		d.errorf(root, "the composed workflow cannot be written: %v", err)
		return nil
	}
	wf.Composed = composed
	return res.Root
}

// warnsOrErrs records one of the composition's problems.
func (d *decoder) warnsOrErrs(p compose.Problem) {
	e := &ParseError{File: p.File, Pos: Pos{Line: p.Line, Col: p.Col}, Msg: p.Msg, Warning: p.Warning}
	if p.Warning {
		d.warns = append(d.warns, e)
	} else {
		d.errs = append(d.errs, e)
	}
}

func asParseErrors(err error, pe *ParseErrors) bool {
	var ok bool
	*pe, ok = err.(ParseErrors)
	return ok
}

// loadComposed reads and parses a file a composition names: its YAML
// problems positioned in it.
func loadComposed(path string) (*compose.Source, error) {
	src, err := ReadNamedFile(path)
	if err != nil {
		return nil, err
	}
	d := &decoder{file: path, src: src}
	root := d.document(src)
	if root == nil {
		return nil, d.errs
	}
	if root.Kind == yaml.SequenceNode { // a list of steps is its commands
		root = &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Line: root.Line, Column: root.Column,
			Content: []*yaml.Node{{Kind: yaml.ScalarNode, Tag: "!!str", Value: "commands", Line: root.Line, Column: root.Column}, root}}
	}
	return &compose.Source{File: path, Src: src, Root: root, Nodes: d.nodes}, nil
}

// fileOf is the file that n comes from: the file parsed, or the one a
// composition took it from.
func (d *decoder) fileOf(n *yaml.Node) string {
	if o := d.origins[n]; o != nil {
		return o.File
	}
	return d.file
}

// fileRank orders files in problems: the file parsed first.
func (d *decoder) fileRank(file string) int {
	if file == d.file {
		return 0
	}
	return 1
}

// inOrigin runs read with d's file and source those of n's origin, so
// that positions inside its values are found in its own file.
func (d *decoder) inOrigin(n *yaml.Node, read func()) {
	o := d.origins[n]
	if o == nil {
		read()
		return
	}
	file, src := d.file, d.src
	d.file, d.src = o.File, o.Src
	defer func() { d.file, d.src = file, src }()
	read()
}

// withoutKeys is mapping m without the given keys.
func withoutKeys(m *yaml.Node, keys []string) *yaml.Node {
	out := *m
	out.Content = nil
	for i := 0; i+1 < len(m.Content); i += 2 {
		if !slices.Contains(keys, m.Content[i].Value) {
			out.Content = append(out.Content, m.Content[i], m.Content[i+1])
		}
	}
	return &out
}
