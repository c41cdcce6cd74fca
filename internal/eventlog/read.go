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
	Types []Type // any of these types; none: every type
	Item  string // only events of this item_id; "": every event
}

// selector is a Query prepared for raw lines: the JSON strings a matching
// line must contain.
type selector struct {
	q     Query
	types [][]byte // one of these; none: any type
	item  []byte   // this one; nil: any item
	dec   *decoder
}

func (q Query) selector() selector {
	sel := selector{q: q, dec: newDecoder()}
	for _, t := range q.Types {
		b, _ := json.Marshal(t)
		sel.types = append(sel.types, b)
	}
	if q.Item != "" {
		sel.item, _ = json.Marshal(q.Item)
	}
	return sel
}

// mayMatch is the cheap test on a raw line: false only when the line
// cannot hold a selected event.
func (sel selector) mayMatch(line []byte) bool {
	if sel.item != nil && !bytes.Contains(line, sel.item) {
		return false
	}
	if len(sel.types) == 0 {
		return true
	}
	for _, t := range sel.types {
		if bytes.Contains(line, t) {
			return true
		}
	}
	return false
}

// decode returns the event on line and whether the query selects it; a
// line that cannot match is not decoded.
func (sel selector) decode(line []byte) (Event, bool, error) {
	var e Event
	if !sel.mayMatch(line) {
		return e, false, nil
	}
	e, err := sel.dec.event(line)
	if err != nil {
		return e, false, damagedLine{err}
	}
	return e, sel.q.Match(e), nil
}

// Match reports whether a decoded event is selected.
func (q Query) Match(e Event) bool {
	return (len(q.Types) == 0 || slices.Contains(q.Types, e.Type)) && (q.Item == "" || e.ItemID == q.Item)
}

// Read returns the events of the log at path that q selects. A final line
// without its newline (a write cut short by a crash) is ignored.
func Read(path string, q Query) ([]Event, error) {
	var out []Event
	err := Scan(path, q, func(e Event) error {
		out = append(out, e)
		return nil
	})
	return out, err
}

// Scan calls fn with each event of the log at path that q selects, in
// order, as Read would return them, without holding them all at once.
func Scan(path string, q Query, fn func(Event) error) error {
	_, err := scan(path, 0, q, fn)
	return err
}

// Until tells Follow when to stop.
type Until struct {
	See  func(Event)          // shown every event read, selected or not
	Done func() (bool, error) // asked each time Follow has read all the log holds
}

// Follow calls fn for each event that q selects, then for each new one as
// it is appended, until ctx is done or until.Done says to stop.
func Follow(ctx context.Context, path string, q Query, fn func(Event) error, until Until) error {
	var offset int64
	emit := func(e Event) error {
		until.See(e)
		if q.Match(e) {
			return fn(e)
		}
		return nil
	}
	ticker := time.NewTicker(100 * time.Millisecond)
	defer ticker.Stop()
	for {
		n, err := scan(path, offset, Query{}, emit) // See must see every event
		if err != nil {
			return err
		}
		offset = n
		if stop, err := until.Done(); err != nil || stop {
			return err
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
	sel := q.selector()
	all := len(q.Types) == 0 && q.Item == ""
	_, err := scanLines(path, 0, func(line []byte) error {
		if all {
			if !json.Valid(line) {
				return damagedLine{errors.New("not a JSON object")}
			}
		} else if _, ok, err := sel.decode(line); !ok {
			return err
		}
		return fn(line)
	})
	return err
}

// scan decodes the events after offset that q selects and passes them to
// fn; it returns the offset after the last complete line.
func scan(path string, offset int64, q Query, fn func(Event) error) (int64, error) {
	sel := q.selector()
	return scanLines(path, offset, func(line []byte) error {
		e, ok, err := sel.decode(line)
		if !ok {
			return err
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

// Last returns the last event of the log at path, read from its end: its
// last complete line (a partial one, cut short by a crash, is passed
// over); ok is false when the log has none.
func Last(path string) (e Event, ok bool, err error) {
	f, err := os.Open(path)
	if err != nil {
		return e, false, fmt.Errorf("event log: %w", err)
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return e, false, fmt.Errorf("event log: %w", err)
	}
	var buf []byte // the log's bytes from at to its end
	for at := info.Size(); ; {
		if end := bytes.LastIndexByte(buf, '\n'); end >= 0 {
			lines := bytes.TrimRight(buf[:end], " \t\r\n") // the complete lines, without blank ones at the end
			start := bytes.LastIndexByte(lines, '\n')
			if len(lines) > 0 && (start >= 0 || at == 0) {
				e, err := newDecoder().event(lines[start+1:])
				if err != nil {
					return e, false, fmt.Errorf("event log %s: damaged last entry: %w", path, err)
				}
				return e, true, nil
			}
		}
		if at == 0 {
			return e, false, nil
		}
		n := min(at, 64<<10)
		at -= n
		chunk := make([]byte, n, n+int64(len(buf)))
		if _, err := f.ReadAt(chunk, at); err != nil {
			return e, false, fmt.Errorf("event log: %w", err)
		}
		buf = append(chunk, buf...)
	}
}
