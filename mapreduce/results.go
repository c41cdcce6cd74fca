package mapreduce

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"sync"

	"github.com/runnerdev/runner/appendfile"
)

// Result is one item's entry in ${map.results}.
type Result struct {
	ItemIndex  int             `json:"item_index"`
	ItemID     string          `json:"item_id"`
	Item       json.RawMessage `json:"item"`
	Status     string          `json:"status"` // succeeded, failed or skipped
	Output     string          `json:"output"` // the agent's stdout, last 64 KiB
	DurationMS int64           `json:"duration_ms"`
	// Commits are the commits the item made on its branch, oldest first
	// (map.isolation: worktree); absent without isolation.
	Commits []string `json:"commits,omitzero"`
}

// resultLog appends each finished item's Result to results.jsonl, one
// write per item, before the item's state is recorded.
type resultLog struct {
	mu  sync.Mutex
	f   *appendfile.File
	buf bytes.Buffer
}

func openResults(path string) (*resultLog, error) {
	f, err := appendfile.Open(path)
	if err != nil {
		return nil, fmt.Errorf("results: %w", err)
	}
	return &resultLog{f: f}, nil
}

func (l *resultLog) add(r Result) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf.Reset()
	enc := json.NewEncoder(&l.buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(r); err != nil {
		return fmt.Errorf("results: item %s: %w", r.ItemID, err)
	}
	if _, err := l.f.Write(l.buf.Bytes()); err != nil {
		return fmt.Errorf("results: %w", err)
	}
	return nil
}

func (l *resultLog) close() error { return l.f.Close() }

// writeResultsFile writes the JSON array of ${map.results_file}: the last
// result of each item, in input order. It reads results.jsonl twice and
// keeps only offsets in memory, so its size does not matter.
func writeResultsFile(from, to string) error {
	src, err := os.Open(from)
	if errors.Is(err, os.ErrNotExist) {
		return os.WriteFile(to, []byte("[]\n"), 0o600)
	}
	if err != nil {
		return fmt.Errorf("results: %w", err)
	}
	defer src.Close()
	type span struct {
		index    int
		off, len int64
	}
	last := map[int]span{}
	r := bufio.NewReaderSize(src, 256<<10)
	var off int64
	for {
		line, err := r.ReadBytes('\n')
		if len(line) > 0 && line[len(line)-1] == '\n' { // a torn last line is skipped
			var head struct {
				Index int `json:"item_index"`
			}
			if json.Unmarshal(line, &head) == nil {
				last[head.Index] = span{head.Index, off, int64(len(line) - 1)}
			}
		}
		off += int64(len(line))
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("results: %w", err)
		}
	}
	order := make([]span, 0, len(last))
	for _, s := range last {
		order = append(order, s)
	}
	slices.SortFunc(order, func(a, b span) int { return a.index - b.index })

	dst, err := os.OpenFile(to+".tmp", os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("results: %w", err)
	}
	w := bufio.NewWriterSize(dst, 256<<10)
	w.WriteString("[")
	for i, s := range order {
		if i > 0 {
			w.WriteString(",")
		}
		w.WriteString("\n")
		if _, err := io.Copy(w, io.NewSectionReader(src, s.off, s.len)); err != nil {
			dst.Close()
			return fmt.Errorf("results: %w", err)
		}
	}
	w.WriteString("\n]\n")
	if err := errors.Join(w.Flush(), dst.Close()); err != nil {
		return fmt.Errorf("results: %w", err)
	}
	return os.Rename(to+".tmp", to)
}
