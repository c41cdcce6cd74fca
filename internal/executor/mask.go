package executor

import (
	"bytes"
	"io"
	"sync"
)

// maskWriter masks secrets in command output on its way to the terminal
// or an item's log.
// It passes on whole lines (ended by \n or \r) so that a secret split
// across writes is still found; Flush passes on the rest when a command
// ends.
type maskWriter struct {
	mu   sync.Mutex
	w    io.Writer
	mask func(string) string
	buf  []byte
}

// MaskOutput wraps w when there are secrets to mask and it is not masked
// already.
func MaskOutput(w io.Writer, mask func(string) string) io.Writer {
	if _, masked := w.(*maskWriter); w == nil || mask == nil || masked {
		return w
	}
	return &maskWriter{w: w, mask: mask}
}

func (m *maskWriter) Write(p []byte) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.buf = append(m.buf, p...)
	end := bytes.LastIndexAny(m.buf, "\n\r") + 1
	if end == 0 {
		return len(p), nil
	}
	_, err := io.WriteString(m.w, m.mask(string(m.buf[:end])))
	m.buf = append(m.buf[:0], m.buf[end:]...)
	return len(p), err
}

// Flush passes on a last line without its newline.
func (m *maskWriter) Flush() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.buf) > 0 {
		io.WriteString(m.w, m.mask(string(m.buf)))
		m.buf = m.buf[:0]
	}
}

// flushOutput passes on what a command left unfinished in a masked writer.
func flushOutput(ws ...io.Writer) {
	for _, w := range ws {
		if f, ok := w.(interface{ Flush() }); ok {
			f.Flush()
		}
	}
}
