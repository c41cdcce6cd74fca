package condition

import (
	"errors"
	"testing"
)

// FuzzCompile: translating a condition from Prodigy's syntax and compiling
// it never panics, every byte of the translation comes from a place in the
// original text, in order, and an error is reported inside the text, so
// that the file position of an error is never before the condition.
func FuzzCompile(f *testing.F) {
	for _, s := range []string{`${DEPLOY} == "yes"`, `steps.build.exit_code == 0`, `${steps.my-step.output:-none} != ""`,
		`item.size > 0 && kind in ["a", "b"]`, `${a.b[0]}`, `${`, `$`, `len(${x}) > ${y:-3}`,
		`a = 1 AND NOT is_null(b) OR contains(c, "AND")`, `path matches '\\.rs$'`, `${x.exists} && y.z.exists`,
		`${test-step.exit_code != 0}`, `length(tags) >= 2 && starts_with(name, "a=")`, `let x = 1; x = 1`, `"${a}-\\d"`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		tr := translate(src)
		if len(tr.from) != tr.out.Len() {
			t.Fatalf("translate(%q): %d origins for %d bytes", src, len(tr.from), tr.out.Len())
		}
		for i, o := range tr.from {
			if o < 0 || o > len(src) || i > 0 && o < tr.from[i-1] {
				t.Fatalf("translate(%q) = %q: byte %d comes from %d (origins %v)", src, tr.out.String(), i, o, tr.from)
			}
		}
		for _, env := range []map[string]any{nil, {"exit_code": 0, "output": ""}} {
			_, err := Compile(src, Options{Env: env})
			var ce *Error
			if err != nil && (!errors.As(err, &ce) || ce.Offset < 0 || ce.Offset > len(src)) {
				t.Fatalf("Compile(%q): error %v outside the text", src, err)
			}
		}
	})
}
