package workflow

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/file"
	"github.com/expr-lang/expr/vm"
	"gopkg.in/yaml.v3"
)

// compileExpr compiles an expression node, written in expr-lang or in
// Prodigy's syntax (see translate). With env, names are checked against
// it and the result must be a boolean. An error is reported at its place
// in the file, in plain words.
func (d *decoder) compileExpr(n *yaml.Node, what string, env map[string]any, extra ...expr.Option) *Expr {
	src, ok := d.str(n, what)
	if !ok {
		return nil
	}
	if strings.TrimSpace(src) == "" {
		d.errorf(n, "%s is empty", what)
		return nil
	}
	opts := slices.Clone(prodigyFunctionOptions)
	if env != nil {
		opts = append(opts, expr.Env(env), expr.AsBool())
	} else {
		opts = append(opts, expr.Patch(missingIsUnordered{}))
	}
	opts = append(opts, extra...)
	t := translate(src)
	out := t.out.String()
	prog, err := expr.Compile(out, opts...)
	if err == nil {
		err = unknownCalls(prog)
	}
	if err != nil {
		msg, _, _ := strings.Cut(err.Error(), "\n")
		off := 0
		var fe *file.Error
		if errors.As(err, &fe) {
			msg = fe.Message
			off = t.origin(runeOffset(out, fe.From), len(src))
		}
		d.errorAt(d.scalarPos(n, off), "%s: invalid expression %q: %s", what, src, plainWords(msg))
		return nil
	}
	return &Expr{Source: src, Program: prog}
}

// runeOffset returns the byte offset of rune r of s (expr-lang counts
// positions in runes).
func runeOffset(s string, r int) int {
	for i := range s {
		if r == 0 {
			return i
		}
		r--
	}
	return len(s)
}

// unknownCalls reports a call of a function that is neither expr-lang's
// nor Prodigy's: expr-lang compiles it as a call of a variable, which
// fails only when it runs, with "cannot call nil".
func unknownCalls(prog *vm.Program) error {
	var err error
	root := prog.Node()
	ast.Walk(&root, callVisitor(func(c *ast.CallNode) {
		id, ok := c.Callee.(*ast.IdentifierNode)
		if !ok || err != nil || id.Value == orderFunction || id.Value == shortFieldFunc ||
			strings.HasPrefix(id.Value, prodigyPrefix) && slices.Contains(prodigyFunctions, id.Value[len(prodigyPrefix):]) {
			return
		}
		err = &file.Error{Location: id.Location(), Message: fmt.Sprintf(
			"unknown function %s (Prodigy's functions are %s; expr-lang's, such as len, upper and trim, work too)",
			id.Value, strings.Join(prodigyFunctions, ", "))}
	}))
	return err
}

type callVisitor func(*ast.CallNode)

func (v callVisitor) Visit(node *ast.Node) {
	if c, ok := (*node).(*ast.CallNode); ok {
		v(c)
	}
}

// tokenWords are expr-lang's token names in its messages, such as
// Bracket("{") or Identifier("x").
var tokenWords = regexp.MustCompile(`(Bracket|Operator|Identifier|Number|String|Bytes)\(("(?:[^"\\]|\\.)*")\)|\bEOF\b`)

// plainWords rewrites an expr-lang message without its token names:
// unexpected token Bracket("{") is unexpected "{", and the internal names
// of Prodigy's functions are the names as written.
func plainWords(msg string) string {
	msg = tokenWords.ReplaceAllStringFunc(msg, func(tok string) string {
		m := tokenWords.FindStringSubmatch(tok)
		switch m[1] {
		case "":
			return "end of the expression"
		case "Identifier":
			v, _ := strconv.Unquote(m[2])
			return "name " + v
		case "Number":
			v, _ := strconv.Unquote(m[2])
			return "number " + v
		case "String", "Bytes":
			return "string " + m[2]
		}
		return m[2]
	})
	msg = strings.ReplaceAll(msg, "unexpected token ", "unexpected ")
	return strings.ReplaceAll(msg, prodigyPrefix, "")
}

// condition compiles a step's when or repeat.until, which read the
// step's scope, and records the steps.ID it reads.
func (d *decoder) condition(n *yaml.Node, what string) *Expr {
	e := d.compileExpr(n, what, nil, d.shortRefOptions(n, what)...)
	if e != nil {
		d.noteExprRefs(n, what, e.Program)
	}
	return e
}

// outcomeEnv is what retry_on.when and repeat.until see of an attempt, for
// checking names at validation.
var outcomeEnv = map[string]any{
	"exit_code": 0, "signal": "", "timed_out": false, "kind": "",
	"stdout": "", "stderr": "", "output": "", "duration": 0.0, "attempt": 0,
}

// Bool runs the expression, which must yield a boolean.
func (e *Expr) Bool(vars map[string]any) (bool, error) {
	v, err := expr.Run(e.Program, vars)
	if err != nil {
		return false, err
	}
	b, ok := v.(bool)
	if !ok {
		return false, fmt.Errorf("%q is %T, not a boolean", e.Source, v)
	}
	return b, nil
}
