package items

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"maps"
	"os"
	"slices"
	"strings"

	"github.com/expr-lang/expr"

	"github.com/runnerdev/runner/internal/executor"
	"github.com/runnerdev/runner/internal/jsonvalue"
	"github.com/runnerdev/runner/workflow"
	"github.com/runnerdev/runner/workflow/interp"
)

// pipeline applies filter, sort_by, distinct, offset and max_items to the
// values read from the input and writes the resulting items, with their
// ids, to the items file.
type pipeline struct {
	m      *workflow.MapPhase
	scope  *executor.Scope // for item_id templates
	out    *itemWriter
	read   int                 // values read from the input
	seen   map[string]struct{} // distinct values
	ids    map[string]int      // custom item ids -> index, for the duplicate check
	valIDs idHashes            // hashes of the value ids given (default ids), 8 bytes an item
	seed   maphash.Seed        // for valIDs
	kept   int                 // items past filter and distinct, before offset
	spool  *os.File            // sort_by: filtered items wait here
	sorted []spooled
}

// spooled is an item waiting in the spool for sort_by.
type spooled struct {
	keys     []any
	off, len int64
}

// Load reads the map input from r through the pipeline into the
// items file at path and returns the number of items.
func Load(r io.Reader, m *workflow.MapPhase, scope *executor.Scope, path string) (int, error) {
	out, err := createItems(path)
	if err != nil {
		return 0, err
	}
	p := &pipeline{m: m, scope: scope, out: out}
	if m.Distinct != "" {
		p.seen = map[string]struct{}{}
	}
	if m.ItemID != nil {
		p.ids = map[string]int{}
	} else {
		p.seed = maphash.MakeSeed()
	}
	if len(m.SortBy) > 0 {
		if p.spool, err = os.CreateTemp("", "runner-spool-*"); err != nil {
			out.abort()
			return 0, fmt.Errorf("sort_by: %w", err)
		}
		defer func() { p.spool.Close(); os.Remove(p.spool.Name()) }()
	}
	err = readInput(r, m.JSONPath, p.add)
	if err == nil && p.spool != nil {
		err = p.flushSorted()
	}
	if err == nil || errors.Is(err, errStop) {
		err = p.renameDuplicateIDs()
	}
	if err != nil && !errors.Is(err, errStop) {
		out.abort()
		return 0, err
	}
	if err := out.commit(); err != nil {
		return 0, err
	}
	return out.n, nil
}

// add takes one value from the input.
func (p *pipeline) add(raw json.RawMessage, v any) error {
	p.read++
	if p.m.Filter != nil {
		ok, err := p.matches(v)
		if err != nil || !ok {
			return err
		}
	}
	if p.spool != nil {
		return p.spoolItem(raw, v)
	}
	return p.keep(raw, v)
}

// matches evaluates the filter with the item as `item` and, for objects,
// its fields at the top level.
func (p *pipeline) matches(v any) (bool, error) {
	env := map[string]any{}
	if obj, ok := v.(map[string]any); ok {
		maps.Copy(env, obj)
	}
	env["item"] = v
	out, err := expr.Run(p.m.Filter.Program, env)
	if err != nil {
		msg, _, _ := strings.Cut(err.Error(), "\n")
		return false, fmt.Errorf("filter %q on input value %d: %s (a missing field is null: give it a default: (item.size ?? 0) * 2)", p.m.Filter.Source, p.read, msg)
	}
	b, ok := out.(bool)
	if !ok {
		return false, fmt.Errorf("filter %q on input value %d gave %T, not a boolean", p.m.Filter.Source, p.read, out)
	}
	return b, nil
}

// keep applies distinct, offset and max_items, then writes the item.
func (p *pipeline) keep(raw json.RawMessage, v any) error {
	if p.seen != nil {
		var key []byte
		switch f := field(v, p.m.Distinct).(type) {
		case string:
			key = jsonvalue.EncodeString(f) // strings outside UTF-8 stay apart
		default:
			key, _ = json.Marshal(f)
		}
		if _, dup := p.seen[string(key)]; dup {
			return nil
		}
		p.seen[string(key)] = struct{}{}
	}
	p.kept++
	if p.kept <= p.m.Offset {
		return nil
	}
	if p.m.MaxItems > 0 && p.out.n >= p.m.MaxItems {
		return errStop
	}
	id, err := p.itemID(raw, v)
	if err != nil {
		return err
	}
	return p.out.write(id, raw)
}

// spoolItem stores a filtered item and its sort keys until the input ends.
func (p *pipeline) spoolItem(raw json.RawMessage, v any) error {
	off, err := p.spool.Seek(0, io.SeekCurrent)
	if err != nil {
		return err
	}
	if _, err := p.spool.Write(raw); err != nil {
		return fmt.Errorf("sort_by: %w", err)
	}
	keys := make([]any, len(p.m.SortBy))
	for i, k := range p.m.SortBy {
		keys[i] = field(v, k.Field)
	}
	p.sorted = append(p.sorted, spooled{keys: keys, off: off, len: int64(len(raw))})
	return nil
}

// flushSorted sorts the spooled items and passes them on in order.
func (p *pipeline) flushSorted() error {
	slices.SortStableFunc(p.sorted, func(a, b spooled) int {
		for i, k := range p.m.SortBy {
			if c := compareKeys(a.keys[i], b.keys[i], k); c != 0 {
				return c
			}
		}
		return 0
	})
	for _, s := range p.sorted {
		raw := make([]byte, s.len)
		if _, err := p.spool.ReadAt(raw, s.off); err != nil {
			return fmt.Errorf("sort_by: %w", err)
		}
		v, err := jsonvalue.Decode(raw)
		if err != nil {
			return err
		}
		if err := p.keep(raw, v); err != nil {
			return err
		}
	}
	return nil
}

// compareKeys orders two sort key values: missing values (null) last
// unless NULLS FIRST; numbers before strings before booleans before
// anything else, each in natural order; DESC reverses all but the nulls.
func compareKeys(a, b any, k workflow.SortKey) int {
	switch an, bn := a == nil, b == nil; {
	case an && bn:
		return 0
	case an != bn:
		if an == k.NullsFirst {
			return -1
		}
		return 1
	}
	c := cmp.Compare(kindRank(a), kindRank(b))
	if c == 0 {
		switch x := a.(type) {
		case string:
			c = cmp.Compare(x, b.(string))
		case bool:
			c = cmp.Compare(boolInt(x), boolInt(b.(bool)))
		case int64, float64:
			c = cmp.Compare(toFloat(a), toFloat(b))
		default:
			ja, _ := json.Marshal(a)
			jb, _ := json.Marshal(b)
			c = strings.Compare(string(ja), string(jb))
		}
	}
	if k.Desc {
		return -c
	}
	return c
}

func kindRank(v any) int {
	switch v.(type) {
	case int64, float64:
		return 0
	case string:
		return 1
	case bool:
		return 2
	}
	return 3
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

func toFloat(v any) float64 {
	if i, ok := v.(int64); ok {
		return float64(i)
	}
	return v.(float64)
}

// field looks up a path such as "size" or "meta.tags[0]" in an item; a
// leading "item." is allowed. Missing fields are nil.
func field(v any, path string) any {
	path = strings.TrimPrefix(path, "item.")
	got, ok := interp.MapLookup(map[string]any{"item": v})("item." + path)
	if !ok {
		return nil
	}
	return got
}
