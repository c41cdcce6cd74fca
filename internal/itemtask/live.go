package itemtask

import (
	"io"

	"github.com/runnerdev/runner/internal/tagline"
)

// Live shows the items' output as it comes (runner run --tag): each line
// of an item's stdout on Stdout and of its stderr on Stderr, prefixed
// with the item's id and a tab, as GNU parallel's --tag does. Lines are
// written whole, one write each: the lines of items running at once never
// mix within a line.
type Live struct {
	Stdout, Stderr io.Writer
}

// Item returns the writers of an item's stdout and stderr, and a function
// that writes what they hold of a last line without a newline (the
// item's end).
func (l *Live) Item(id string) (stdout, stderr io.Writer, flush func()) {
	out := tagline.New(l.Stdout, id+"\t")
	errs := tagline.New(l.Stderr, id+"\t")
	return out, errs, func() {
		out.Flush()
		errs.Flush()
	}
}
