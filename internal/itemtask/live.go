package itemtask

import (
	"bytes"
	"io"
	"sync"
)

// Live shows the items' output as it comes (runner run --tag): each line
// of an item's stdout on Stdout and of its stderr on Stderr, prefixed
// with the item's id and a tab, as GNU parallel's --tag does. Lines are
// written whole, one write each: the lines of items running at once never
// mix within a line.
type Live struct {
	Stdout, Stderr io.Writer
}

// maxTagLine is the longest line a tagWriter holds back: a longer one is
// written in pieces of this size, each a line of its own.
const maxTagLine = 64 << 10

// Item returns the writers of an item's stdout and stderr, their lines
// prefixed with tag (its id; a step's label, for the steps of a job, as
// job.Options.Tag), and a function that writes what they hold of a last
// line without a newline (the item's end).
func (l *Live) Item(tag string) (stdout, stderr io.Writer, flush func()) {
	out := &tagWriter{w: l.Stdout, prefix: tag + "\t"}
	errs := &tagWriter{w: l.Stderr, prefix: tag + "\t"}
	return out, errs, func() {
		out.flush()
		errs.flush()
	}
}

// tagWriter writes each complete line of what it is given to w with
// prefix before it, holding a partial last line back until its newline
// comes or flush is called. It never fails: the item's own output matters
// more than its copy on the terminal.
type tagWriter struct {
	mu      sync.Mutex
	w       io.Writer
	prefix  string
	partial []byte
}

func (t *tagWriter) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.partial = append(t.partial, p...)
	var out []byte
	for {
		n := bytes.IndexByte(t.partial, '\n')
		if n < 0 && len(t.partial) < maxTagLine {
			break
		}
		next := n + 1
		if n < 0 || n > maxTagLine {
			n, next = maxTagLine, maxTagLine
		}
		out = t.appendLine(out, t.partial[:n])
		t.partial = t.partial[next:]
	}
	if len(out) > 0 {
		_, _ = t.w.Write(out)
		t.partial = bytes.Clone(t.partial) // let go of what was written
	}
	return len(p), nil
}

// appendLine appends line, prefixed and ended with a newline, to out.
func (t *tagWriter) appendLine(out, line []byte) []byte {
	out = append(out, t.prefix...)
	out = append(out, line...)
	return append(out, '\n')
}

// flush writes a held partial line, ending it with a newline.
func (t *tagWriter) flush() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.partial) > 0 {
		_, _ = t.w.Write(t.appendLine(nil, t.partial))
		t.partial = nil
	}
}
