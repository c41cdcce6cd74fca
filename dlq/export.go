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

// WriteJSON writes items as one indented JSON array ("[]" when empty),
// followed by a newline.
func WriteJSON(w io.Writer, items []Item) error {
	a := NewArrayWriter(w)
	for _, it := range items {
		if err := a.Write(it); err != nil {
			return err
		}
	}
	return a.Close()
}

// WriteJSONL writes items as JSON Lines: one compact object per line.
func WriteJSONL(w io.Writer, items []Item) error {
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	enc.SetEscapeHTML(false)
	for _, it := range items {
		if err := enc.Encode(it); err != nil {
			return err
		}
	}
	return bw.Flush()
}
