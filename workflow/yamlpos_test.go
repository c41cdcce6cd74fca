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
		{"a list item out of line", "- shell: echo x\n - shell: echo y\n", "2:2: invalid YAML: did not find expected '-' indicator"},
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
	want := fmt.Sprintf("f.yml:%d:1: invalid YAML: did not find expected '-' indicator", n)
	if err == nil || err.Error() != want {
		t.Errorf("got %v, want %s", err, want)
	}
}
