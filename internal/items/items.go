package items

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/runnerdev/runner/internal/jsonvalue"
)

// Item is one work item of a map phase.
type Item struct {
	Index int             // position in the final item list, from 0
	ID    string          // item_id, unique in the job
	Raw   json.RawMessage // the item as JSON (a JSON string for plain lines: see jsonvalue.EncodeString)
	Value any             // Raw decoded: map[string]any, []any, string, int64, float64, bool or nil
}

// itemRecord is one line of the job's items file.
type itemRecord struct {
	Index int             `json:"i"`
	ID    string          `json:"id"`
	Item  json.RawMessage `json:"item"`
}

// itemWriter writes the items file: to a temporary name, renamed into
// place by commit so that a complete file means a complete load.
type itemWriter struct {
	path string
	f    *os.File
	w    *bufio.Writer
	n    int
}

func createItems(path string) (*itemWriter, error) {
	f, err := os.OpenFile(path+".tmp", os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return nil, fmt.Errorf("items file: %w", err)
	}
	return &itemWriter{path: path, f: f, w: bufio.NewWriterSize(f, 256<<10)}, nil
}

func (iw *itemWriter) write(id string, raw json.RawMessage) error {
	line, err := json.Marshal(itemRecord{Index: iw.n, ID: id, Item: raw})
	if err != nil {
		return fmt.Errorf("item %d: %w", iw.n, err)
	}
	iw.n++
	iw.w.Write(line)
	return iw.w.WriteByte('\n')
}

// rewriteIDs rewrites the items written so far with the ids rename
// gives them.
func (iw *itemWriter) rewriteIDs(rename func(index int, id string) string) error {
	if err := iw.w.Flush(); err != nil {
		return fmt.Errorf("items file: %w", err)
	}
	written, err := os.Open(iw.path + ".tmp")
	if err != nil {
		return fmt.Errorf("items file: %w", err)
	}
	defer written.Close()
	next, err := createItems(iw.path + ".ids")
	if err != nil {
		return err
	}
	r := bufio.NewReaderSize(written, 256<<10)
	for {
		line, err := r.ReadBytes('\n')
		if errors.Is(err, io.EOF) && len(line) == 0 {
			break
		}
		if err != nil && !errors.Is(err, io.EOF) {
			next.abort()
			return fmt.Errorf("items file: %w", err)
		}
		var rec itemRecord
		if err := json.Unmarshal(line, &rec); err != nil {
			next.abort()
			return fmt.Errorf("items file: item %d: %w", next.n, err)
		}
		if err := next.write(rename(rec.Index, rec.ID), rec.Item); err != nil {
			next.abort()
			return err
		}
	}
	iw.f.Close()
	if err := os.Rename(next.path+".tmp", iw.path+".tmp"); err != nil {
		next.abort()
		return fmt.Errorf("items file: %w", err)
	}
	iw.f, iw.w = next.f, next.w
	return nil
}

// commit syncs the file and renames it into place.
func (iw *itemWriter) commit() error {
	err := errors.Join(iw.w.Flush(), iw.f.Sync(), iw.f.Close())
	if err == nil {
		err = os.Rename(iw.path+".tmp", iw.path)
	}
	if err != nil {
		return fmt.Errorf("items file: %w", err)
	}
	return nil
}

func (iw *itemWriter) abort() {
	iw.f.Close()
	os.Remove(iw.path + ".tmp")
}

// Read calls fn for each item of the items file, in order, until fn
// returns false or an error.
func Read(path string, fn func(*Item) (bool, error)) error {
	return ReadUnless(path, func(int) bool { return false }, fn)
}

// ReadUnless is Read for the items whose index skip does not name: the
// others' lines are passed over without being decoded (the items file's
// line n is the item at index n), so that a resumed map reads only what
// it has left to run.
func ReadUnless(path string, skip func(index int) bool, fn func(*Item) (bool, error)) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("items file: %w", err)
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 256<<10)
	for n := 1; ; n++ {
		if skip(n - 1) {
			if err := skipLine(r); errors.Is(err, io.EOF) {
				return nil
			} else if err != nil {
				return fmt.Errorf("items file: %w", err)
			}
			continue
		}
		line, err := r.ReadBytes('\n')
		if errors.Is(err, io.EOF) && len(line) == 0 {
			return nil
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return fmt.Errorf("items file: %w", err)
		}
		var rec itemRecord
		if err := json.Unmarshal(bytes.TrimSpace(line), &rec); err != nil {
			return fmt.Errorf("items file %s:%d: %w", path, n, err)
		}
		v, err := jsonvalue.Decode(rec.Item)
		if err != nil {
			return fmt.Errorf("items file %s:%d: %w", path, n, err)
		}
		more, err := fn(&Item{Index: rec.Index, ID: rec.ID, Raw: rec.Item, Value: v})
		if err != nil || !more {
			return err
		}
	}
}

// skipLine reads past the next line; io.EOF when there is none.
func skipLine(r *bufio.Reader) error {
	for {
		line, err := r.ReadSlice('\n')
		switch {
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF) && len(line) > 0:
			return nil // a last line without its newline
		}
		return err
	}
}

// Count returns the number of items in the items file at path.
func Count(path string) (int, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	n := 0
	sc := bufio.NewReaderSize(f, 256<<10)
	for {
		_, err := sc.ReadSlice('\n')
		switch {
		case err == nil:
			n++
		case errors.Is(err, bufio.ErrBufferFull):
		case errors.Is(err, io.EOF):
			return n, nil
		default:
			return 0, err
		}
	}
}
