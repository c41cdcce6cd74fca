package condition

import (
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/vm/runtime"
)

// prodigyFunctionOptions define Prodigy's filter functions for expr-lang,
// under their internal names. A missing value (nil) is no match and has
// length 0, as a missing field is in Prodigy's filters.
var prodigyFunctionOptions = []expr.Option{
	expr.Function(prodigyPrefix+"is_null", func(p ...any) (any, error) { return p[0] == nil, nil }, new(func(any) bool)),
	expr.Function(prodigyPrefix+"is_not_null", func(p ...any) (any, error) { return p[0] != nil, nil }, new(func(any) bool)),
	expr.Function(prodigyPrefix+"contains", func(p ...any) (any, error) { return containsValue(p[0], p[1]), nil }, new(func(any, any) bool)),
	expr.Function(prodigyPrefix+"starts_with", textTest("starts_with", noError(strings.HasPrefix)), new(func(any, any) bool)),
	expr.Function(prodigyPrefix+"ends_with", textTest("ends_with", noError(strings.HasSuffix)), new(func(any, any) bool)),
	expr.Function(prodigyPrefix+"matches", textTest("matches", matchesPattern), new(func(any, any) bool)),
	expr.Function(prodigyPrefix+"length", func(p ...any) (any, error) { return length(p[0]) }, new(func(any) int)),
	expr.Function(orderFunction, order, new(func(string, any, any) bool)),
}

// orderFunction is what missingIsUnordered makes of <, <=, > and >=.
const orderFunction = prodigyPrefix + "order"

// missingIsUnordered rewrites the ordering comparisons of a condition
// (<, <=, >, >=) as calls of order, so that a comparison with a missing
// value is false, as in Prodigy's filters (File.score >= 10 of an item
// without File), instead of failing the job.
type missingIsUnordered struct{}

func (missingIsUnordered) Visit(node *ast.Node) {
	b, ok := (*node).(*ast.BinaryNode)
	if !ok || b.Operator != "<" && b.Operator != "<=" && b.Operator != ">" && b.Operator != ">=" {
		return
	}
	call := &ast.CallNode{Callee: &ast.IdentifierNode{Value: orderFunction}, Arguments: []ast.Node{&ast.StringNode{Value: b.Operator}, b.Left, b.Right}}
	ast.Patch(node, call)
}

// order compares a and b with op; with a missing value it is false.
func order(p ...any) (res any, err error) {
	op, a, b := p[0].(string), p[1], p[2]
	if a == nil || b == nil {
		return false, nil
	}
	defer func() {
		if r := recover(); r != nil {
			res, err = nil, fmt.Errorf("%v", r) // runtime's "invalid operation: string < int"
		}
	}()
	switch op {
	case "<":
		return runtime.Less(a, b), nil
	case "<=":
		return runtime.LessOrEqual(a, b), nil
	case ">":
		return runtime.More(a, b), nil
	}
	return runtime.MoreOrEqual(a, b), nil
}

// containsValue is Prodigy's contains: a substring of a string, an element
// of a list, or a key of a mapping.
func containsValue(in, v any) bool {
	switch in := in.(type) {
	case string:
		s, ok := v.(string)
		return ok && strings.Contains(in, s)
	case []any:
		for _, e := range in {
			if runtime.Equal(e, v) {
				return true
			}
		}
	case map[string]any:
		s, ok := v.(string)
		_, has := in[s]
		return ok && has
	}
	return false
}

// textTest makes a function of two strings; a missing string is no match.
func textTest(name string, test func(s, arg string) (bool, error)) func(p ...any) (any, error) {
	return func(p ...any) (any, error) {
		if p[0] == nil || p[1] == nil {
			return false, nil
		}
		s, ok1 := p[0].(string)
		arg, ok2 := p[1].(string)
		if !ok1 || !ok2 {
			return nil, fmt.Errorf("%s compares text, not %T and %T", name, p[0], p[1])
		}
		return test(s, arg)
	}
}

// noError makes a test that cannot fail a textTest.
func noError(test func(s, arg string) bool) func(s, arg string) (bool, error) {
	return func(s, arg string) (bool, error) { return test(s, arg), nil }
}

// matchesPattern reports whether s matches the regular expression re.
func matchesPattern(s, re string) (bool, error) {
	ok, err := regexp.MatchString(re, s)
	if err != nil {
		return false, fmt.Errorf("matches: %w", err)
	}
	return ok, nil
}

// length is the number of characters of a string, or of elements of a
// list or mapping; a missing value has none.
func length(v any) (any, error) {
	switch v := v.(type) {
	case nil:
		return 0, nil
	case string:
		return utf8.RuneCountInString(v), nil
	case []any:
		return len(v), nil
	case map[string]any:
		return len(v), nil
	}
	return nil, fmt.Errorf("length counts text, lists and mappings, not %T", v)
}
