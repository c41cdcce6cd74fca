package workflow

import (
	"fmt"
	"strings"
	"testing"
)

// A YAML syntax error is reported at the line and column that are wrong,
// not where the list or mapping around it starts (yaml.v3's line), in the
// shapes of Prodigy's invalid files.
func TestYAMLErrorAtTheProblem(t *testing.T) {
	for _, tc := range []struct{ name, src, want string }{
		{"a key after a top-level list", "# a comment\n- shell: a\n  timeout: 10\n\n- shell: b\n\nconfig:\n  x: 1\n",
			"7:1: invalid YAML: did not find expected '-' indicator"},
		{"an unquoted value with ': '", "map:\n  agent_template:\n    - shell: echo \"item ${item.id}: ${item.task}\"\n",
			"3:35: invalid YAML: mapping values are not allowed in this context"},
		{"a block scalar not indented", "reduce:\n  - shell: echo\n  - shell: |\n    cat << EOF\n    Report\n    EOF\n",
			"4:5: invalid YAML: could not find expected ':'"},
		{"a list item out of line", "- shell: echo x\n - shell: echo y\n", "2:2: invalid YAML: did not find expected '-' indicator (check the indentation of the line above)"},
		{"a key indented under a value", "- shell: a\n   timeout: 5\n", "2:11: invalid YAML: mapping values are not allowed in this context (check the indentation of the line above)"},
		{"a block scalar's text not indented", "- shell: |\n  echo\n  timeout: 5\n- shell: b\n", "2:3: invalid YAML: could not find expected ':' (check the indentation of the line above)"},
		{"an unquoted colon in a value", "- shell: echo a: b\n", `1:1: invalid YAML: mapping values are not allowed in this context (a value that contains ": " must be quoted`},
		{"a key after a list of steps", "- shell: a\nconfig: {}\n", "2:1: invalid YAML: did not find expected '-' indicator (a file that is a list of steps has no keys after it: put the steps under commands:)"},
		{"a step after a mapping", "commands:\n  - shell: a\n- shell: b\n", "3:1: invalid YAML: did not find expected key (a workflow mapping has no list items at the top level: indent the step under commands:)"},
		{"an unclosed quote, where it opens", "- shell: echo\n- shell: \"echo\n\n", "2:10: invalid YAML: found unexpected end of stream"},
	} {
		_, err := Parse("f.yml", []byte(tc.src))
		if err == nil || !strings.HasPrefix(err.Error(), "f.yml:"+tc.want) {
			t.Errorf("%s: got %v, want f.yml:%s", tc.name, err, tc.want)
		}
	}
}

// A file too large to bisect quickly keeps yaml.v3's line, one before the
// line that is wrong here.
func TestYAMLErrorInLargeFileIsNotBisected(t *testing.T) {
	var b strings.Builder
	n := 0
	for b.Len() <= maxBisectSize {
		n++
		fmt.Fprintf(&b, "- shell: echo %d\n", n)
	}
	b.WriteString("config:\n  x: 1\n")
	_, err := Parse("f.yml", []byte(b.String()))
	want := fmt.Sprintf("f.yml:%d:1: invalid YAML: did not find expected '-' indicator (a file that is a list of steps has no keys after it: put the steps under commands:)", n)
	if err == nil || err.Error() != want {
		t.Errorf("got %v, want %s", err, want)
	}
}

// A bad mode is the one error of its file, with the spelling it meant:
// the errors that would follow from reading the file in another mode
// ("needs commands", "map belongs to MapReduce workflows") are not given.
func TestBadModeIsTheOneError(t *testing.T) {
	for src, want := range map[string]string{
		"name: x\nmode: map-reduce\nmap:\n  input: x\n  agent_template: [{shell: x}]\n": `2:7: mode must be one of standard, mapreduce, not "map-reduce" (did you mean "mapreduce"?)`,
		"mode: Standard\ncommands: [{shell: x}]\n":                                      `1:7: mode must be one of standard, mapreduce, not "Standard" (did you mean "standard"?)`,
	} {
		if errs := parseErr(t, "w.yml", src); len(errs) != 1 || errs[0] != want {
			t.Errorf("%q: got %q, want the one error %q", src, errs, want)
		}
	}
}
