package condition

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/file"
	"github.com/expr-lang/expr/vm"
)

// Options are what a condition is compiled with.
type Options struct {
	// Env, when set, is the variables the condition may name (checked at
	// compile time), and the result must be a boolean. Without it names
	// are not checked and a comparison with a missing value is false.
	Env map[string]any
	// Functions are the names of functions Extra defines, which a call
	// may name besides expr-lang's and Prodigy's.
	Functions []string
	Extra     []expr.Option
}

// Error is a condition that does not compile: where in its text, and why
// in plain words (no expr-lang token names).
type Error struct {
	Offset  int // byte offset in the condition as written
	Message string
}

func (e *Error) Error() string { return e.Message }

// Compile compiles src, written in expr-lang or in Prodigy's syntax (see
// Translate). A call of a function nobody defines is an error here, where
// expr-lang would fail only when the condition runs ("cannot call nil").
// Its error is an *Error.
func Compile(src string, o Options) (*vm.Program, error) {
	opts := slices.Clone(prodigyFunctionOptions)
	if o.Env != nil {
		opts = append(opts, expr.Env(o.Env), expr.AsBool())
	} else {
		opts = append(opts, expr.Patch(missingIsUnordered{}))
	}
	opts = append(opts, o.Extra...)
	t := translate(src)
	out := t.out.String()
	prog, err := expr.Compile(out, opts...)
	if err == nil {
		err = unknownCalls(prog, o.Functions)
	}
	if err != nil {
		msg, _, _ := strings.Cut(err.Error(), "\n")
		off := 0
		var fe *file.Error
		if errors.As(err, &fe) {
			msg = fe.Message
			off = t.origin(runeOffset(out, fe.From), len(src))
		}
		return nil, &Error{Offset: off, Message: plainWords(msg)}
	}
	return prog, nil
}

// Translate is src in expr-lang's syntax, as Compile compiles it.
func Translate(src string) string { return translate(src).out.String() }

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
// nor Prodigy's nor defined: expr-lang compiles it as a call of a variable, which
// fails only when it runs, with "cannot call nil".
func unknownCalls(prog *vm.Program, defined []string) error {
	var err error
	root := prog.Node()
	ast.Walk(&root, callVisitor(func(c *ast.CallNode) {
		id, ok := c.Callee.(*ast.IdentifierNode)
		if !ok || err != nil || id.Value == orderFunction || slices.Contains(defined, id.Value) ||
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
var tokenWords = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(Bracket|Operator|Identifier|Number|String|Bytes)\(("(?:[^"\\]|\\.)*")\)|\bEOF\b`)
})

// plainWords rewrites an expr-lang message without its token names:
// unexpected token Bracket("{") is unexpected "{", and the internal names
// of Prodigy's functions are the names as written.
func plainWords(msg string) string {
	msg = tokenWords().ReplaceAllStringFunc(msg, func(tok string) string {
		m := tokenWords().FindStringSubmatch(tok)
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
