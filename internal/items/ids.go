package items

import (
	"container/heap"
	"encoding/json"
	"fmt"
	"hash/maphash"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/runnerdev/runner/workflow/interp"
)

// maxValueID is the length in bytes of the longest value that becomes an
// item's default id.
const maxValueID = 64

// itemID gives the item about to be written its id: item_id expanded and
// checked to be new, or by default its value or item_<index> (defaultID).
func (p *pipeline) itemID(raw json.RawMessage, v any) (string, error) {
	index := p.out.n
	if p.m.ItemID == nil {
		return p.defaultID(raw, v, index), nil
	}
	sc := p.scope.Child()
	sc.Set("item", v)
	sc.Set("item_index", index)
	id, err := p.m.ItemID.Expand(sc.Lookup(), interp.Plain)
	switch {
	case err != nil:
		return "", fmt.Errorf("item %d: item_id: %w", index, err)
	case id == "":
		return "", fmt.Errorf("item %d: item_id %q gives an empty id", index, p.m.ItemID.String())
	case !utf8.ValidString(id): // ids are keys and names in JSON: they must be text
		return "", fmt.Errorf("item %d: item_id %q gives %q, which is not UTF-8 text", index, p.m.ItemID.String(), id)
	}
	if first, dup := p.ids[id]; dup {
		return "", fmt.Errorf("duplicate item id %q: items %d and %d (item_id %s)", id, first, index, p.m.ItemID.String())
	}
	p.ids[id] = index
	return id, nil
}

// defaultID is the id of an item without item_id: its value (valueID)
// unless an earlier item took that id (renameDuplicateIDs), else
// item_<index>. No value id has the form item_<digits>, so the two kinds
// never meet.
func (p *pipeline) defaultID(raw json.RawMessage, v any, index int) string {
	if id, ok := valueID(raw, v); ok {
		p.valIDs.add(maphash.String(p.seed, id))
		return id
	}
	return "item_" + strconv.Itoa(index)
}

// renameDuplicateIDs gives item_<index> to each item whose value id an
// earlier item has, once the items are written: only a hash is kept per
// value id (idHashes, no map), and when two are equal the items file is
// rewritten with the later items renamed. Two values with one hash (a
// 2^-64 chance) give the later item its index id: still unique, never a
// duplicate.
func (p *pipeline) renameDuplicateIDs() error {
	dup := p.valIDs.repeated()
	p.valIDs = nil
	if len(dup) == 0 {
		return nil
	}
	return p.out.rewriteIDs(func(index int, id string) string {
		if isIndexID(id) {
			return id
		}
		h := maphash.String(p.seed, id)
		seen, ok := dup[h]
		if !ok {
			return id
		}
		if !seen {
			dup[h] = true
			return id
		}
		return "item_" + strconv.Itoa(index)
	})
}

// valueID returns the id a string or number item may take by default: the
// string, or the number as the input writes it, when it is at most
// maxValueID bytes of letters (accents too), digits and ._-+,:@/%= (no white
// space, nothing a shell would expand), does not start with '-' (it would
// read as an option) or '=' (zsh expands =word) and is not item_<digits>.
func valueID(raw json.RawMessage, v any) (string, bool) {
	var id string
	switch v := v.(type) {
	case string:
		id = v
	case int64, float64:
		id = string(raw)
	default:
		return "", false
	}
	if id == "" || len(id) > maxValueID || id[0] == '-' || id[0] == '=' || !utf8.ValidString(id) || isIndexID(id) {
		return "", false
	}
	for i, r := range id {
		mark := i > 0 && unicode.IsMark(r) // a decomposed accent
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) && !mark && !strings.ContainsRune("._-+,:@/%=", r) {
			return "", false
		}
	}
	return id, true
}

// isIndexID reports whether id has the form item_<digits>.
func isIndexID(id string) bool {
	digits, ok := strings.CutPrefix(id, "item_")
	return ok && digits != "" && strings.Trim(digits, "0123456789") == ""
}

// idHashes are hashes kept in chunks of a fixed size, so that keeping a
// million of them never copies them into a larger slice (which held both
// copies at once).
type idHashes [][]uint64

const hashChunk = 1 << 16

func (h *idHashes) add(x uint64) {
	if n := len(*h); n == 0 || len((*h)[n-1]) == hashChunk {
		*h = append(*h, make([]uint64, 0, hashChunk))
	}
	last := &(*h)[len(*h)-1]
	*last = append(*last, x)
}

// repeated returns the hashes that occur more than once, each false: the
// chunks sorted, then merged in order.
func (h idHashes) repeated() map[uint64]bool {
	heads := make(hashHeads, 0, len(h))
	for _, c := range h {
		slices.Sort(c)
		heads = append(heads, c)
	}
	heap.Init(&heads)
	dup := map[uint64]bool{}
	for seen, last := false, uint64(0); len(heads) > 0; {
		c := heads[0]
		if seen && c[0] == last {
			dup[last] = false
		}
		seen, last = true, c[0]
		if len(c) == 1 {
			heap.Pop(&heads)
		} else {
			heads[0] = c[1:]
			heap.Fix(&heads, 0)
		}
	}
	return dup
}

// hashHeads is a heap of sorted, non-empty chunks by their first hash.
type hashHeads [][]uint64

func (h hashHeads) Len() int           { return len(h) }
func (h hashHeads) Less(i, j int) bool { return h[i][0] < h[j][0] }
func (h hashHeads) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *hashHeads) Push(x any)        { *h = append(*h, x.([]uint64)) }
func (h *hashHeads) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
