package interp

import (
	"slices"
	"testing"
)

// A placeholder among a for loop's words, unquoted and without |raw, is
// one word; quoted, raw, or elsewhere in the command it is not reported.
func TestForWords(t *testing.T) {
	tests := []struct {
		src  string
		want []string
	}{
		{"for x in ${LIST}; do echo $x; done", []string{"${LIST}"}},
		{"for x in a $LIST ${item.tags}\ndo echo $x; done", []string{"$LIST", "${item.tags}"}},
		{"set -e; for f in ${FILES}; do :; done", []string{"${FILES}"}},
		{"if true; then for f in ${FILES}; do :; done; fi", []string{"${FILES}"}},
		{`for x in "${LIST}"; do echo $x; done`, nil},
		{"for x in ${LIST|raw}; do echo $x; done", nil},
		{"for x in 'a'; do echo ${LIST}; done", nil},
		{"echo for x in ${LIST}", nil},
		{"rm -rf ${BUILD_DIR}", nil},
		{"# for x in ${LIST}", nil},
	}
	for _, tt := range tests {
		tmpl, err := Parse(tt.src)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, r := range tmpl.ForWords() {
			got = append(got, r.Src)
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("%q: ForWords = %q, want %q", tt.src, got, tt.want)
		}
	}
}
