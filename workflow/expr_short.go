package workflow

import (
	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/ast"
	"gopkg.in/yaml.v3"
)

// CaptureMetaVar is the variable that holds each capture's metadata, by
// capture name: what ${NAME.exit_code} and the like read when NAME's value
// has no such field. No ${...} path or expression can name it ("#" is in
// no variable name).
const CaptureMetaVar = "capture#"

// shortFieldFunc is the function a condition's NAME.field becomes.
const shortFieldFunc = "runnerShortField"

// shortRefs rewrites Prodigy's NAME.field in a condition (when:
// "${build.success}") into shortFieldFunc(NAME, "NAME", "field", $env),
// which reads like ${NAME.field} in a command: the value's own field, else
// the capture's metadata, else the step of that id; and records each such
// read for checkRefs.
type shortRefs struct {
	d    *decoder
	n    *yaml.Node
	what string
}

func (v shortRefs) Visit(node *ast.Node) {
	m, ok := (*node).(*ast.MemberNode)
	if !ok {
		return
	}
	root, ok := m.Node.(*ast.IdentifierNode)
	if !ok {
		return
	}
	prop, ok := m.Property.(*ast.StringNode)
	if !ok {
		return
	}
	name, field, ok := shortPath(root.Value + "." + prop.Value)
	if !ok {
		return
	}
	v.d.refs = append(v.d.refs, stepRef{pos: pos(v.n), what: v.what, id: name, at: v.d.at, field: field})
	ast.Patch(node, &ast.CallNode{
		Callee:    &ast.IdentifierNode{Value: shortFieldFunc},
		Arguments: []ast.Node{root, &ast.StringNode{Value: name}, &ast.StringNode{Value: field}, &ast.IdentifierNode{Value: "$env"}},
	})
}

// shortRefOptions are the expr options of a condition that reads Prodigy's
// NAME.field.
func (d *decoder) shortRefOptions(n *yaml.Node, what string) []expr.Option {
	return []expr.Option{expr.Patch(shortRefs{d: d, n: n, what: what}), expr.Function(shortFieldFunc, shortField)}
}

// shortField reads field of value (the variable name) or, when value has
// none, of the capture's metadata or the step named name, from the
// condition's variables env; nil when none has it.
func shortField(args ...any) (any, error) {
	value, name, field, env := args[0], args[1].(string), args[2].(string), args[3]
	if m, ok := value.(map[string]any); ok {
		if v, ok := m[field]; ok {
			return v, nil
		}
	}
	vars, _ := env.(map[string]any)
	for _, ns := range []string{CaptureMetaVar, "steps"} {
		if byName, ok := vars[ns].(map[string]any); ok {
			if m, ok := byName[name].(map[string]any); ok {
				if v, ok := m[field]; ok {
					return v, nil
				}
			}
		}
	}
	return nil, nil
}
