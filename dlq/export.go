package dlq

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
)

// ArrayWriter writes items one by one as one indented JSON array, as
// WriteJSON does, holding none of them.
type ArrayWriter struct {
	w   *bufio.Writer
	buf bytes.Buffer
	enc *json.Encoder
	n   int
}

// NewArrayWriter starts an array on w; Close ends it.
func NewArrayWriter(w io.Writer) *ArrayWriter {
	a := &ArrayWriter{w: bufio.NewWriter(w)}
	a.enc = json.NewEncoder(&a.buf)
	a.enc.SetEscapeHTML(false)
	a.enc.SetIndent("  ", "  ")
	return a
}

// Write adds an item to the array.
func (a *ArrayWriter) Write(it Item) error {
	a.buf.Reset()
	if err := a.enc.Encode(it); err != nil {
		return err
	}
	sep := ",\n  "
	if a.n == 0 {
		sep = "[\n  "
	}
	a.n++
	a.w.WriteString(sep)
	_, err := a.w.Write(bytes.TrimSuffix(a.buf.Bytes(), []byte("\n")))
	return err
}

// Close ends the array ("[]" when it has no item) with a newline.
func (a *ArrayWriter) Close() error {
	end := "\n]\n"
	if a.n == 0 {
		end = "[]\n"
	}
	a.w.WriteString(end)
	return a.w.Flush()
}

// LinesWriter writes items one by one as JSON Lines: one compact object
// per line.
type LinesWriter struct {
	w   *bufio.Writer
	enc *json.Encoder
}

// NewLinesWriter starts JSON Lines on w; Close flushes them.
func NewLinesWriter(w io.Writer) *LinesWriter {
	l := &LinesWriter{w: bufio.NewWriter(w)}
	l.enc = json.NewEncoder(l.w)
	l.enc.SetEscapeHTML(false)
	return l
}

// Write adds an item's line.
func (l *LinesWriter) Write(it Item) error { return l.enc.Encode(it) }

// Close writes what is buffered.
func (l *LinesWriter) Close() error { return l.w.Flush() }

// ExportWriter writes items one by one in an export format, holding none
// of them; Close ends the document.
type ExportWriter interface {
	Write(Item) error
	Close() error
}

// Export formats: one indented JSON array, or JSON Lines.
const (
	FormatJSON  = "json"
	FormatJSONL = "jsonl"
)

// NewExportWriter starts a document of format on w; ok is false for a
// format that is not FormatJSON or FormatJSONL.
func NewExportWriter(w io.Writer, format string) (ew ExportWriter, ok bool) {
	switch format {
	case FormatJSON:
		return NewArrayWriter(w), true
	case FormatJSONL:
		return NewLinesWriter(w), true
	}
	return nil, false
}
