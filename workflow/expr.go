package workflow

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/expr-lang/expr"
	"gopkg.in/yaml.v3"
)

// placeholderPath is a ${path} or ${path:-default} inside an expression.
var placeholderPath = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*(?:-[A-Za-z0-9_-]*\.[A-Za-z_][A-Za-z0-9_-]*)?(?:\[[0-9]+\]|\.[A-Za-z_][A-Za-z0-9_-]*)*)(?::-([^}]*))?\}`)

// pathSegment is one ".name" segment of a path.
var pathSegment = regexp.MustCompile(`\.([A-Za-z_][A-Za-z0-9_-]*)`)

// exprSource turns the ${path} placeholders that Prodigy writes in
// conditions (when: '${DEPLOY} == "yes"') into expr variable references;
// segments with a hyphen become ["name"] lookups. Inside a quoted string
// ('"${DEPLOY}" == "yes"') a placeholder is the variable's value as text,
// as in the shell, and "" when it is undefined.
func exprSource(src string) string {
	var b strings.Builder
	for i := 0; i < len(src); {
		q := strings.IndexAny(src[i:], `"'`)
		if q < 0 {
			b.WriteString(placeholderPath.ReplaceAllStringFunc(src[i:], exprRef))
			break
		}
		b.WriteString(placeholderPath.ReplaceAllStringFunc(src[i:i+q], exprRef))
		i += q
		n := quotedLen(src[i:])
		b.WriteString(quotedSource(src[i : i+n]))
		i += n
	}
	return b.String()
}

// quotedLen returns the length of the string literal at the start of s,
// its quotes included (all of s when it is not closed).
func quotedLen(s string) int {
	for i := 1; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case s[0]:
			return i + 1
		}
	}
	return len(s)
}

// quotedSource turns a string literal with placeholders into a
// concatenation: "v${x}" becomes ("v" + string(x ?? "")).
func quotedSource(lit string) string {
	q, body := lit[:1], lit[1:]
	if !strings.HasSuffix(body, q) {
		return lit // unterminated: expr reports it
	}
	body = body[:len(body)-1]
	locs := placeholderPath.FindAllStringIndex(body, -1)
	if locs == nil {
		return lit
	}
	var parts []string
	at := 0
	for _, l := range locs {
		if l[0] > at {
			parts = append(parts, q+body[at:l[0]]+q)
		}
		ref := exprRef(body[l[0]:l[1]])
		if !strings.HasPrefix(ref, "(") {
			ref = "(" + ref + ` ?? "")`
		}
		parts = append(parts, "string"+ref)
		at = l[1]
	}
	if at < len(body) {
		parts = append(parts, q+body[at:]+q)
	}
	return "(" + strings.Join(parts, " + ") + ")"
}

// exprRef turns one placeholder into an expr reference.
func exprRef(m string) string {
	sub := placeholderPath.FindStringSubmatch(m)
	path := sub[1]
	if first, _, _ := strings.Cut(path, "."); strings.Contains(first, "-") {
		path = "steps." + path // a name with a hyphen can only be a step id: ${unit-tests.exit_code}
	}
	path = pathSegment.ReplaceAllStringFunc(path, func(seg string) string {
		if strings.Contains(seg, "-") {
			return "[" + strconv.Quote(seg[1:]) + "]"
		}
		return seg
	})
	if strings.Contains(m, ":-") {
		return "(" + path + " ?? " + strconv.Quote(sub[2]) + ")"
	}
	return path
}

// compileExpr compiles an expression node. With env, names are checked
// against it and the result must be a boolean.
func (d *decoder) compileExpr(n *yaml.Node, what string, env map[string]any, extra ...expr.Option) *Expr {
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
	opts = append(opts, extra...)
	prog, err := expr.Compile(exprSource(src), opts...)
	if err != nil {
		msg, _, _ := strings.Cut(err.Error(), "\n")
		d.errorf(n, "%s: invalid expression %q: %s", what, src, msg)
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
