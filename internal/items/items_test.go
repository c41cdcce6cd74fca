package items

import (
	"maps"
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

// The hashes of default ids, kept in chunks, give the ones repeated
// whichever chunks their copies are in.
func TestIDHashesRepeated(t *testing.T) {
	var h idHashes
	n := 3*hashChunk + 5
	for i := range n {
		h.add(uint64(n - i)) // each once, descending
	}
	for _, x := range []uint64{7, uint64(n), 7, hashChunk + 1} { // again, in the last chunk
		h.add(x)
	}
	h.add(uint64(n + 1)) // a new one
	got := slices.Sorted(maps.Keys(h.repeated()))
	if want := []uint64{7, hashChunk + 1, uint64(n)}; !slices.Equal(got, want) {
		t.Errorf("repeated %v, want %v", got, want)
	}
}
