package workflow

import (
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// The file position of a byte of a value is found in every YAML scalar
// style: escapes, doubled quotes, folded lines and block indentation do
// not shift it.
func TestScalarPos(t *testing.T) {
	for _, tc := range []struct {
		name, src, find string
		want            Pos
	}{
		{"plain", "k: a b X", "X", Pos{1, 8}},
		{"plain over lines", "k: a b\n  c X\n", "X", Pos{2, 5}},
		{"double-quoted escapes", `k: "a\tb\u00e9\"X"`, "X", Pos{1, 17}},
		{"double-quoted line break escaped", "k: \"ab\\\n   cX\"", "X", Pos{2, 5}},
		{"single-quoted doubled quote", `k: 'it''s X'`, "X", Pos{1, 11}},
		{"literal block", "k: |\n  one\n    two X\n", "X", Pos{3, 9}},
		{"folded block", "k: >-\n  one\n  two\n\n  three X\n", "X", Pos{5, 9}},
		{"non-ASCII before", "k: \"é X\"", "X", Pos{1, 7}},
	} {
		var doc yaml.Node
		if err := yaml.Unmarshal([]byte(tc.src), &doc); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		n := doc.Content[0].Content[1]
		off := strings.Index(n.Value, tc.find)
		d := &decoder{src: []byte(tc.src)}
		if got := d.scalarPos(n, off); got != tc.want {
			t.Errorf("%s: %q at %v, want %v", tc.name, n.Value, got, tc.want)
		}
	}
}
