package workflow

import (
	"errors"
	"fmt"
	"strings"

	"github.com/expr-lang/expr"
	"gopkg.in/yaml.v3"

	"github.com/runnerdev/runner/workflow/condition"
)

// compileExpr compiles an expression node, written in expr-lang or in
// Prodigy's syntax (see package condition). With env, names are checked
// against it and the result must be a boolean. An error is reported at
// its place in the file, in plain words.
func (d *decoder) compileExpr(n *yaml.Node, what string, env map[string]any, extra ...expr.Option) *Expr {
	src, ok := d.str(n, what)
	if !ok {
		return nil
	}
	if strings.TrimSpace(src) == "" {
		d.errorf(n, "%s is empty", what)
		return nil
	}
	prog, err := condition.Compile(src, condition.Options{Env: env, Functions: []string{shortFieldFunc}, Extra: extra})
	var ce *condition.Error
	if errors.As(err, &ce) {
		d.errorAt(d.scalarPos(n, ce.Offset), "%s: invalid expression %q: %s", what, src, ce.Message)
		return nil
	}
	return &Expr{Source: src, Program: prog}
}

// condition compiles a step's when or repeat.until, which read the
// step's scope, and records the steps.ID it reads.
func (d *decoder) condition(n *yaml.Node, what string) *Expr {
	e := d.compileExpr(n, what, nil, d.shortRefOptions(n, what)...)
	if e != nil {
		d.noteExprRefs(n, what, e.Program)
		d.noteExprNames(n, e.Program)
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
