package cmd

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"unicode/utf8"

	"github.com/runnerdev/runner/internal/printable"
	"github.com/runnerdev/runner/internal/spool"
)

// table is a text table of runner's output, its columns aligned as
// text/tabwriter aligns them (each column as wide as its widest cell
// plus two spaces, over each run of rows that have a cell after it; a
// row's last cell not padded), in memory that does not grow with its
// rows: the rows wait in a spool while the widths are measured, and are
// written out padded by flush. So a table of a DLQ's 100,000 items costs
// what one of 10 does, and its rows can be made while the DLQ is open
// and written once it is closed. Each cell stays on one line with its
// control characters escaped (printable.Line): an item's id or a
// command's words can neither break the table nor reach the terminal as
// escape sequences (a tab in a cell is escaped too, which makes it the
// spool's cell separator).
type table struct {
	out    io.Writer
	rows   spool.Spool
	blocks [][]int // per column, the widths of its runs of rows, in order
	open   []bool  // per column, whether the last row continued its run
	line   []byte
	err    error
}

// newTable starts a table on w.
func newTable(w io.Writer) *table { return &table{out: w} }

// row writes a row of cells, each as fmt.Sprint shows it.
func (t *table) row(cells ...any) {
	t.line = t.line[:0]
	for i, c := range cells {
		start := len(t.line)
		if s, ok := c.(string); ok {
			t.line = printable.AppendLine(t.line, s)
		} else {
			t.line = printable.AppendLine(t.line, fmt.Sprint(c))
		}
		if i < len(cells)-1 {
			t.measure(i, utf8.RuneCount(t.line[start:]))
			t.line = append(t.line, '\t')
		}
	}
	for i := max(len(cells)-1, 0); i < len(t.open); i++ {
		t.open[i] = false
	}
	if _, err := t.rows.Write(append(t.line, '\n')); err != nil && t.err == nil {
		t.err = err
	}
}

// measure takes the width of a cell of column col that has a cell after
// it into the width of its run of rows.
func (t *table) measure(col, width int) {
	for len(t.open) <= col {
		t.open, t.blocks = append(t.open, false), append(t.blocks, nil)
	}
	if !t.open[col] {
		t.blocks[col], t.open[col] = append(t.blocks[col], 0), true
	}
	last := len(t.blocks[col]) - 1
	t.blocks[col][last] = max(t.blocks[col][last], width)
}

// flush writes the table out.
func (t *table) flush() error {
	defer t.rows.Close()
	if t.err != nil {
		return t.err
	}
	r, err := t.rows.Reader()
	if err != nil {
		return err
	}
	in, out := bufio.NewReader(r), bufio.NewWriter(t.out)
	run := make([]int, len(t.blocks)) // per column, its run of the row being written, counted from 1
	open := make([]bool, len(t.blocks))
	for {
		line, err := in.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			rest, err2 := in.ReadBytes('\n')
			line, err = append(bytes.Clone(line), rest...), err2
		}
		if len(line) == 0 && err == io.EOF {
			return out.Flush()
		}
		if err != nil {
			return err
		}
		col := 0
		for {
			cell, after, ok := bytes.Cut(line, []byte{'\t'})
			if !ok {
				out.Write(line)
				break
			}
			if !open[col] {
				run[col], open[col] = run[col]+1, true
			}
			out.Write(cell)
			for pad := t.blocks[col][run[col]-1] + 2 - utf8.RuneCount(cell); pad > 0; pad-- {
				out.WriteByte(' ')
			}
			line, col = after, col+1
		}
		for ; col < len(open); col++ {
			open[col] = false
		}
	}
}
