package cmd

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/runnerdev/runner/internal/printable"
)

// table is a text table of runner's output, its columns aligned. Each
// cell stays on one line with its control characters escaped
// (printable.Line): an item's id or a command's words can neither break
// the table nor reach the terminal as escape sequences.
type table struct{ tw *tabwriter.Writer }

// newTable starts a table on w.
func newTable(w io.Writer) *table { return &table{tw: tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)} }

// row writes a row of cells, each as fmt.Sprint shows it.
func (t *table) row(cells ...any) {
	line := make([]byte, 0, 128)
	for i, c := range cells {
		if i > 0 {
			line = append(line, '\t')
		}
		if s, ok := c.(string); ok {
			line = printable.AppendLine(line, s)
		} else {
			line = printable.AppendLine(line, fmt.Sprint(c))
		}
	}
	t.tw.Write(append(line, '\n'))
}

// flush writes the table out.
func (t *table) flush() error { return t.tw.Flush() }
