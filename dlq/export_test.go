package dlq

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"
)

// An ArrayWriter writes, item by item, the document an encoder writes of
// the whole slice: the same indents, "<" and "&" as they are, "[]" for
// none.
func TestArrayWriterWritesTheSliceDocument(t *testing.T) {
	it := Item{JobID: "j", ItemID: "a<b>&c", Item: json.RawMessage(`{"n":[1,{"x":"y"}]}`), FailureCount: 1,
		LastFailure: time.Unix(5, 0).UTC(), Failures: []Failure{{Attempt: 1, Kind: "exit", ExitCode: 3, Message: "<&>"}}}
	for _, items := range [][]Item{nil, {it}, {it, {ItemID: "empty"}, it}} {
		var want, got bytes.Buffer
		enc := json.NewEncoder(&want)
		enc.SetEscapeHTML(false)
		enc.SetIndent("", "  ")
		if items == nil {
			enc.Encode([]Item{})
		} else {
			enc.Encode(items)
		}
		a := NewArrayWriter(&got)
		for _, it := range items {
			if err := a.Write(it); err != nil {
				t.Fatal(err)
			}
		}
		if err := a.Close(); err != nil {
			t.Fatal(err)
		}
		if got.String() != want.String() {
			t.Errorf("%d items:\n%s\nwant:\n%s", len(items), got.String(), want.String())
		}
	}
}
