package items

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// ReadUnless passes over the lines of the items it skips without
// decoding them (a resumed map skips its finished items so): a line it
// skips may be anything, even one longer than its buffer.
func TestReadUnlessDecodesOnlyWhatItReads(t *testing.T) {
	path := filepath.Join(t.TempDir(), "items.jsonl")
	lines := []string{
		`{"i":0,"id":"a","item":"a"}`,
		`not JSON: never decoded`,
		`{"i":2,"id":"` + strings.Repeat("x", 300<<10) + `"`, // neither
		`{"i":3,"id":"d","item":"d"}`,
		`{"i":4,"id":"e","item":"e"}`, // the last line, without its newline
	}
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		skip []int
		want []string
	}{
		{[]int{1, 2}, []string{"a", "d", "e"}},
		{[]int{0, 1, 2, 3}, []string{"e"}},
		{[]int{0, 1, 2, 3, 4}, nil},
	} {
		var got []string
		err := ReadUnless(path, func(i int) bool { return slices.Contains(tc.skip, i) }, func(it *Item) (bool, error) {
			got = append(got, it.ID)
			return true, nil
		})
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("skipping %v: read %v, %v; want %v", tc.skip, got, err, tc.want)
		}
	}
}
