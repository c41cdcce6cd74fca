package tagline

import (
	"bytes"
	"io"
	"sync"
)

// MaxLine is the longest line a Writer holds back: a longer one is
// written in pieces of this size, each a line of its own.
const MaxLine = 64 << 10

// Writer writes each complete line of what it is given to its stream with
// its tag before it, holding a partial last line back until its newline
// comes or Flush is called. It never fails: the command's own output
// matters more than its copy on the stream. It is safe for concurrent
// use.
type Writer struct {
	mu      sync.Mutex
	w       io.Writer
	tag     string
	partial []byte
}

// New returns a Writer of w's lines, each after tag.
func New(w io.Writer, tag string) *Writer { return &Writer{w: w, tag: tag} }

func (t *Writer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.partial = append(t.partial, p...)
	var out []byte
	for {
		n := bytes.IndexByte(t.partial, '\n')
		if n < 0 && len(t.partial) < MaxLine {
			break
		}
		next := n + 1
		if n < 0 || n > MaxLine {
			n, next = MaxLine, MaxLine
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

// appendLine appends line, tagged and ended with a newline, to out.
func (t *Writer) appendLine(out, line []byte) []byte {
	out = append(out, t.tag...)
	out = append(out, line...)
	return append(out, '\n')
}

// Flush writes a held partial line, ending it with a newline.
func (t *Writer) Flush() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.partial) > 0 {
		_, _ = t.w.Write(t.appendLine(nil, t.partial))
		t.partial = nil
	}
}
