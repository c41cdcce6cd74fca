package eventlog

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"
)

// Filter selects events; a nil Filter selects all.
type Filter func(Event) bool

// Read returns the events of the log at path that pass keep. A final line
// without its newline (a write cut short by a crash) is ignored.
func Read(path string, keep Filter) ([]Event, error) {
	var out []Event
	_, err := scan(path, 0, keep, func(e Event) error {
		out = append(out, e)
		return nil
	})
	return out, err
}

// Follow calls fn for each event that passes keep, then for each new one as
// it is appended, until ctx is done or stop returns true after an event.
func Follow(ctx context.Context, path string, keep Filter, fn func(Event) error, stop func(Event) bool) error {
	var offset int64
	done := false
	emit := func(e Event) error {
		if err := fn(e); err != nil {
			return err
		}
		if stop != nil && stop(e) {
			done = true
		}
		return nil
	}
	ticker := time.NewTicker(100 * time.Millisecond)
	defer ticker.Stop()
	for {
		n, err := scan(path, offset, keep, emit)
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
func scan(path string, offset int64, keep Filter, fn func(Event) error) (int64, error) {
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
		if len(line) == 0 {
			continue
		}
		var e Event
		if err := e.UnmarshalJSON(line); err != nil {
			return offset, fmt.Errorf("event log %s: damaged entry at byte %d: %w", path, offset-int64(len(line))-1, err)
		}
		if keep != nil && !keep(e) {
			continue
		}
		if err := fn(e); err != nil {
			return offset, err
		}
	}
}
