package dlq_test

import (
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/runnerdev/runner/dlq"
)

func TestSignatureItemStrings(t *testing.T) {
	obj := map[string]any{"name": "corrupt.jpg", "dir": "in", "size": 3.0, "tags": []any{"red"}}
	tests := []struct {
		name, message string
		own           []string
		want          string
	}{
		{"string item", "cannot decode huge.tiff: bad header", dlq.ItemStrings("item_0", "huge.tiff"), "cannot decode ITEM: bad header"},
		{"object field", "cannot decode corrupt.jpg: bad header", dlq.ItemStrings("item_1", obj), "cannot decode ITEM: bad header"},
		{"item id", "upload of photo-a failed", dlq.ItemStrings("photo-a", nil), "upload of ITEM failed"},
		{"longest first", "cannot decode huge.tiff", dlq.ItemStrings("huge", "huge.tiff"), "cannot decode ITEM"},
		{"whole words only", "cannot concatenate cat", dlq.ItemStrings("item_2", "cat"), "cannot concatenate ITEM"},
		{"every occurrence", "huge.tiff: huge.tiff is bad", dlq.ItemStrings("item_3", "huge.tiff"), "ITEM: ITEM is bad"},
		{"short strings stay", "in is not a file", dlq.ItemStrings("item_4", obj), "in is not a file"},
		{"numbers stay numbers", "value 120 is odd", dlq.ItemStrings("item_5", "120"), "value N is odd"},
		{"quoted", `open "huge.tiff": denied`, dlq.ItemStrings("item_6", "huge.tiff"), `open "…": denied`},
		{"regexp characters", "bad a+b(c): no", dlq.ItemStrings("item_7", "a+b(c)"), "bad ITEM: no"},
		{"not an item string", "cannot decode other.png", dlq.ItemStrings("item_8", "huge.tiff"), "cannot decode other.png"},
		{"none", "exit status 3", nil, "exit status N"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := dlq.Signature(tt.message, tt.own...); got != tt.want {
				t.Errorf("Signature(%q, %q) = %q, want %q", tt.message, tt.own, got, tt.want)
			}
		})
	}
}

// Add computes an item's signature with its own id and value replaced, so
// that items failing with "the same" error about themselves group.
func TestAddSignatureOfItem(t *testing.T) {
	d := open(t, filepath.Join(t.TempDir(), "dlq.db"), dlq.Options{})
	e1 := entry("item_0", 0, t0, "cannot decode huge.tiff: bad header")
	e1.Item = json.RawMessage(`"huge.tiff"`)
	e2 := entry("corrupt", 1, t0, "cannot decode corrupt.jpg: bad header")
	e2.Item = json.RawMessage(`{"name":"corrupt","file":"corrupt.jpg"}`)
	if err := d.Add(e1, e2); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"item_0", "corrupt"} {
		it, err := d.Get(id)
		if err != nil {
			t.Fatal(err)
		}
		if want := "cannot decode ITEM: bad header"; it.ErrorSignature != want {
			t.Errorf("item %s: signature %q, want %q", id, it.ErrorSignature, want)
		}
	}
	// A later failure without the item (as dlq retry may record it) still
	// uses the stored item.
	e1.Item, e1.Failure.Message = nil, "cannot decode huge.tiff: truncated"
	if err := d.Add(e1); err != nil {
		t.Fatal(err)
	}
	if it, _ := d.Get("item_0"); it.ErrorSignature != "cannot decode ITEM: truncated" {
		t.Errorf("after a second failure: signature %q", it.ErrorSignature)
	}
}
