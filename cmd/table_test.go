package cmd

import (
	"bytes"
	"math/rand/v2"
	"strings"
	"testing"
	"text/tabwriter"
)

// A table lines up its cells as text/tabwriter does, whatever the shape
// of its rows (runs of rows with more or fewer cells, empty rows, wide
// characters), also when its rows go beyond the spool's memory into its
// file.
func TestTableAlignsAsTabwriter(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	words := []string{"", "a", "item_42", "LAST FAILURE", "héllo", "日本語", "x\ty", "2026-12-07 03:00:00"}
	for _, rows := range []int{0, 1, 7, 50, 60_000} {
		var want, got bytes.Buffer
		tw := tabwriter.NewWriter(&want, 0, 0, 2, ' ', 0)
		tb := newTable(&got)
		for range rows {
			cells := make([]any, r.IntN(5))
			text := make([]string, len(cells))
			for i := range cells {
				w := words[r.IntN(len(words))]
				if i == 0 {
					w = strings.Repeat(w, 1+r.IntN(8))
				}
				cells[i] = w
				text[i] = strings.ReplaceAll(w, "\t", `\t`)
			}
			tw.Write([]byte(strings.Join(text, "\t") + "\n"))
			tb.row(cells...)
		}
		tw.Flush()
		if err := tb.flush(); err != nil {
			t.Fatal(err)
		}
		if spilled := tb.rows.Spilled(); spilled != (rows == 60_000) {
			t.Errorf("%d rows: spilled to a file %v", rows, spilled)
		}
		if got.String() != want.String() {
			t.Errorf("%d rows:\n%s\nwant (tabwriter):\n%s", rows, head(got.String()), head(want.String()))
		}
	}
}

func head(s string) string { return s[:min(len(s), 2000)] }
