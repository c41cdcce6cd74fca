package workflow

import (
	"regexp"
	"strconv"
	"strings"

	"github.com/expr-lang/expr"
	"gopkg.in/yaml.v3"
)

// placeholderPath is a ${path} or ${path:-default} inside an expression.
var placeholderPath = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*(?:\[[0-9]+\]|\.[A-Za-z_][A-Za-z0-9_-]*)*)(?::-([^}]*))?\}`)

// pathSegment is one ".name" segment of a path.
var pathSegment = regexp.MustCompile(`\.([A-Za-z_][A-Za-z0-9_-]*)`)

// exprSource turns the ${path} placeholders that Prodigy writes in
// conditions (when: '${DEPLOY} == "yes"') into expr variable references;
// segments with a hyphen become ["name"] lookups.
func exprSource(src string) string {
	return placeholderPath.ReplaceAllStringFunc(src, func(m string) string {
		sub := placeholderPath.FindStringSubmatch(m)
		path := pathSegment.ReplaceAllStringFunc(sub[1], func(seg string) string {
			if strings.Contains(seg, "-") {
				return "[" + strconv.Quote(seg[1:]) + "]"
			}
			return seg
		})
		if strings.Contains(m, ":-") {
			return "(" + path + " ?? " + strconv.Quote(sub[2]) + ")"
		}
		return path
	})
}

// compileExpr compiles an expression node. With env, names are checked
// against it and the result must be a boolean.
func (d *decoder) compileExpr(n *yaml.Node, what string, env map[string]any) *Expr {
	src, ok := d.str(n, what)
	if !ok {
		return nil
	}
	if strings.TrimSpace(src) == "" {
		d.errorf(n, "%s is empty", what)
		return nil
	}
	opts := []expr.Option{}
	if env != nil {
		opts = append(opts, expr.Env(env), expr.AsBool())
	}
	prog, err := expr.Compile(exprSource(src), opts...)
	if err != nil {
		msg, _, _ := strings.Cut(err.Error(), "\n")
		d.errorf(n, "%s: invalid expression %q: %s", what, src, msg)
		return nil
	}
	return &Expr{Source: src, Program: prog}
}

// outcomeEnv is what retry_on.when and repeat.until see of an attempt, for
// checking names at validation.
var outcomeEnv = map[string]any{
	"exit_code": 0, "signal": "", "timed_out": false, "kind": "",
	"stdout": "", "stderr": "", "output": "", "duration": 0.0, "attempt": 0,
}
