package condition

import (
	"testing"

	"github.com/expr-lang/expr"
)

// =~ and !~ are a regular-expression match and its negation (issue 39.4):
// ${x} =~ 're' is expr-lang's matches.
func TestRegexMatchOperators(t *testing.T) {
	env := map[string]any{"branch": "release/1.2", "output": "error: 3 tests failed"}
	for _, tt := range []struct {
		src  string
		want bool
	}{
		{`${branch} =~ '^release/'`, true},
		{`${branch} =~ "^main$"`, false},
		{`${branch} !~ '^release/'`, false},
		{`branch!~'^main$'`, true},
		{`${output} =~ '\d+ tests failed' AND ${branch} !~ 'main'`, true},
		{`${branch} == 'release/1.2' && output =~ 'error'`, true},
	} {
		program, err := Compile(tt.src, Options{Env: env})
		if err != nil {
			t.Errorf("Compile(%q): %v", tt.src, err)
			continue
		}
		got, err := expr.Run(program, env)
		if err != nil || got != tt.want {
			t.Errorf("%q (%s) = %v, %v; want %v", tt.src, Translate(tt.src), got, err, tt.want)
		}
	}
}
