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

// Raw calls fn with each line of the log that q selects, as written: a
// line is decoded only when q needs to look inside it, so copying a large
// log out costs little more than reading it.
func Raw(path string, q Query, fn func(line []byte) error) error {
	types, item := q.needles()
	exact := len(q.Types) > 0 || q.Item != ""
	_, err := scanLines(path, 0, func(line []byte) error {
		if !mayMatch(line, types, item) {
			return nil
		}
		if exact {
			var e Event
			if err := e.UnmarshalJSON(line); err != nil {
				return damagedLine{err}
			}
			if !q.Match(e) {
				return nil
			}
		} else if !json.Valid(line) {
			return damagedLine{errors.New("not a JSON object")}
		}
		return fn(line)
	})
	return err
}

// scan decodes the events after offset that q selects and passes them to
// fn; it returns the offset after the last complete line.
func scan(path string, offset int64, q Query, fn func(Event) error) (int64, error) {
	types, item := q.needles()
	return scanLines(path, offset, func(line []byte) error {
		if !mayMatch(line, types, item) {
			return nil
		}
		var e Event
		if err := e.UnmarshalJSON(line); err != nil {
			return damagedLine{err}
		}
		if !q.Match(e) {
			return nil
		}
		return fn(e)
	})
}

// damagedLine is a line of the log that is not an event.
type damagedLine struct{ err error }

func (d damagedLine) Error() string { return d.err.Error() }

// scanLines calls fn with each complete, non-blank line from offset and
// returns the offset after the last complete line; a partial last line
// (a write cut short, or one still being written) waits for its newline.
func scanLines(path string, offset int64, fn func([]byte) error) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return offset, fmt.Errorf("event log: %w", err)
	}
	defer f.Close()
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		return offset, fmt.Errorf("event log: %w", err)
	}
	r := bufio.NewReaderSize(f, 256<<10)
	for {
		line, err := r.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			// A line longer than the buffer: collect it whole.
			long := append([]byte(nil), line...)
			for errors.Is(err, bufio.ErrBufferFull) {
				line, err = r.ReadSlice('\n')
				long = append(long, line...)
			}
			line = long
		}
		if errors.Is(err, io.EOF) {
			return offset, nil
		}
		if err != nil {
			return offset, fmt.Errorf("event log: %w", err)
		}
		start := offset
		offset += int64(len(line))
		if line = bytes.TrimSpace(line); len(line) == 0 {
			continue
		}
		if err := fn(line); err != nil {
			var damaged damagedLine
			if errors.As(err, &damaged) {
				return offset, fmt.Errorf("event log %s: damaged entry at byte %d: %w", path, start, damaged.err)
			}
			return offset, err
		}
	}
}
