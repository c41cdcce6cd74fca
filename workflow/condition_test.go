package workflow

import (
	"strings"
	"testing"

	"github.com/runnerdev/runner/workflow/condition"
	"gopkg.in/yaml.v3"
)

// compileCondition compiles src as a when: in a file of one step.
func compileCondition(t *testing.T, src string) (*Expr, ParseErrors) {
	t.Helper()
	file := "- shell: x\n  when: " + src + "\n"
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(file), &doc); err != nil {
		t.Fatalf("%s: %v", src, err)
	}
	d := &decoder{file: "f.yml", src: []byte(file)}
	n := doc.Content[0].Content[0].Content[3]
	return d.compileExpr(n, "when", nil), d.errs
}

// Prodigy's filter syntax means what its words say, and expr-lang's own
// syntax keeps working beside it.
func TestProdigyConditions(t *testing.T) {
	vars := map[string]any{
		"path": "src/main.rs", "has_issues": true, "severity": "high", "score": 12.0, "tags": []any{"a", "b"},
		"File": map[string]any{"score": 11.0}, "empty": nil, "item": map[string]any{"name": "x AND y"},
		"steps": map[string]any{"test-step": map[string]any{"exit_code": 1}},
	}
	for _, tc := range []struct {
		src  string
		want bool
	}{
		{`"severity = 'high' AND score >= 10"`, true},
		{`"severity = 'low' OR NOT has_issues"`, false},
		{`"NOT (severity = 'low')"`, true},
		{`"path matches '\\.rs$' && has_issues == true"`, true},
		{`"matches(path, '^src/')"`, true},
		{`"is_null(empty) and is_not_null(path)"`, true},
		{`"is_null(missing.field)"`, true},
		{`"contains(path, 'main') AND contains(tags, 'b') AND NOT contains(tags, 'c')"`, true},
		{`"path contains 'main'"`, true},
		{`"starts_with(path, 'src/') AND ends_with(path, '.rs')"`, true},
		{`"starts_with(empty, 'x')"`, false},
		{`"length(tags) = 2 AND length(path) > 5 AND length(empty) == 0"`, true},
		{`"File.score.exists AND NOT Function.score.exists"`, true},
		{`"${File.exists} && !${Function.exists}"`, true},
		{`"${score} > 10"`, true},
		{`"item.name == 'x AND y'"`, true},
		{`"item.name = \"x AND y\""`, true},
		{`"${steps.test-step.exit_code != 0}"`, true},
		{`"File.score >= 10 OR Function.score >= 10"`, true},
		{`"let n = 2; n = 2"`, true},
	} {
		e, errs := compileCondition(t, tc.src)
		if e == nil {
			t.Errorf("%s: %v", tc.src, errs)
			continue
		}
		got, err := e.Bool(vars)
		if err != nil || got != tc.want {
			t.Errorf("%s = %v, %v; want %v (expr-lang: %s)", tc.src, got, err, tc.want, condition.Translate(e.Source))
		}
	}
}

// An error in a condition is reported at its column in the file, in
// plain words, also when the translation moved the text, and a call of a
// function nobody defines is an error before anything runs.
func TestConditionErrors(t *testing.T) {
	for _, tc := range []struct{ src, want string }{
		{`"a = 1 AND frobnicate(b)"`, `2:20: when: invalid expression "a = 1 AND frobnicate(b)": unknown function frobnicate (`},
		{`"${x} == 1 && y == {"`, `2:28: when: invalid expression "${x} == 1 && y == {": a map key must be`},
		{`'a == )'`, `2:15: when: invalid expression "a == )": unexpected ")"`},
		{`'a b'`, `2:12: when: invalid expression "a b": unexpected name b`},
		{`"is_null(a, b)"`, `2:10: when: invalid expression "is_null(a, b)": too many arguments to call is_null`},
		{`"a == 'x\\q' AND b == 'y\\tz' AND ="`, `2:43: when: invalid expression "a == 'x\\q' AND b == 'y\\tz' AND =": unexpected "=="`},
		{"|\n    a == 1\n    AND b ==", `4:13: when: invalid expression "a == 1\nAND b ==\n": unexpected end of the expression`},
	} {
		_, errs := compileCondition(t, tc.src)
		if len(errs) != 1 || !strings.HasPrefix(strings.TrimPrefix(errs[0].Error(), "f.yml:"), tc.want) {
			t.Errorf("%s: got %v, want one error %s", tc.src, errs, tc.want)
		}
	}
}
