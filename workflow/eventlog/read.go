package eventlog

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"time"
)

// Query selects events by type and item; the zero Query selects all.
// Lines that cannot match are skipped before they are decoded, so a query
// over a large log costs little more than reading it.
type Query struct {
	Types []string // any of these types; none: every type
	Item  string   // only events of this item_id; "": every event
}

// needles are the JSON strings a matching line must contain.
func (q Query) needles() (types [][]byte, item []byte) {
	for _, t := range q.Types {
		b, _ := json.Marshal(t)
		types = append(types, b)
	}
	if q.Item != "" {
		item, _ = json.Marshal(q.Item)
	}
	return types, item
}

// mayMatch is the cheap test on a raw line: false only when the line
// cannot hold a matching event.
func mayMatch(line []byte, types [][]byte, item []byte) bool {
	if item != nil && !bytes.Contains(line, item) {
		return false
	}
	if len(types) == 0 {
		return true
	}
	for _, t := range types {
		if bytes.Contains(line, t) {
			return true
		}
	}
	return false
}

// Match reports whether a decoded event is selected.
func (q Query) Match(e Event) bool {
	return (len(q.Types) == 0 || slices.Contains(q.Types, e.Type)) && (q.Item == "" || e.Str("item_id") == q.Item)
}

// Read returns the events of the log at path that q selects. A final line
// without its newline (a write cut short by a crash) is ignored.
func Read(path string, q Query) ([]Event, error) {
	var out []Event
	_, err := scan(path, 0, q, func(e Event) error {
		out = append(out, e)
		return nil
	})
	return out, err
}

// Follow calls fn for each event that q selects, then for each new one as
// it is appended, until ctx is done or stop returns true after an event
// (stop sees every event, selected or not).
func Follow(ctx context.Context, path string, q Query, fn func(Event) error, stop func(Event) bool) error {
	var offset int64
	done := false
	emit := func(e Event) error {
		if q.Match(e) {
			if err := fn(e); err != nil {
				return err
			}
		}
		if stop != nil && stop(e) {
			done = true
		}
		return nil
	}
	ticker := time.NewTicker(100 * time.Millisecond)
	defer ticker.Stop()
	for {
		n, err := scan(path, offset, Query{}, emit) // stop must see every event
		if err != nil {
			return err
		}
		offset = n
		if done {
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-ticker.C:
		}
	}
}

// scan reads complete lines from offset and returns the offset after the
// last complete line.
func scan(path string, offset int64, q Query, fn func(Event) error) (int64, error) {
	types, item := q.needles()
	f, err := os.Open(path)
	if err != nil {
		return offset, fmt.Errorf("event log: %w", err)
	}
	defer f.Close()
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		return offset, fmt.Errorf("event log: %w", err)
	}
	r := bufio.NewReaderSize(f, 64<<10)
	for {
		line, err := r.ReadBytes('\n')
		if errors.Is(err, io.EOF) {
			return offset, nil // a partial last line waits for its newline
		}
		if err != nil {
			return offset, fmt.Errorf("event log: %w", err)
		}
		offset += int64(len(line))
		line = bytes.TrimSpace(line)
		if len(line) == 0 || !mayMatch(line, types, item) {
			continue
		}
		var e Event
		if err := e.UnmarshalJSON(line); err != nil {
			return offset, fmt.Errorf("event log %s: damaged entry at byte %d: %w", path, offset-int64(len(line))-1, err)
		}
		if !q.Match(e) {
			continue
		}
		if err := fn(e); err != nil {
			return offset, err
		}
	}
}
