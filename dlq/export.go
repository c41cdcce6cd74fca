package dlq

import (
	"bufio"
	"encoding/json"
	"io"
)

// WriteJSON writes items as one indented JSON array ("[]" when empty),
// followed by a newline.
func WriteJSON(w io.Writer, items []Item) error {
	if items == nil {
		items = []Item{}
	}
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	return enc.Encode(items)
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
