package mapreduce

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/runnerdev/runner/internal/appendfile"
	"github.com/runnerdev/runner/internal/eventlog"
	"github.com/runnerdev/runner/internal/itemtask"
	"github.com/runnerdev/runner/internal/state"
	"github.com/runnerdev/runner/retryv2"
)

// Result is one item's entry in ${map.results}: Prodigy's AgentResult
// (agent/types.rs), so that a reduce written for Prodigy reads it
// unchanged, with runner's own fields beside it.
type Result struct {
	ItemID string `json:"item_id"`
	// Status is "Success", {"Failed": MSG} or "Timeout".
	Status  AgentStatus `json:"status"`
	Output  string      `json:"output"` // the agent's stdout, last 64 KiB
	Commits []string    `json:"commits"`
	// FilesModified are the files the item's commits changed
	// (map.isolation: worktree).
	FilesModified []string `json:"files_modified,omitempty"`
	Duration      Duration `json:"duration"`
	Error         string   `json:"error,omitempty"`
	// WorktreePath and BranchName are the item's git worktree (removed
	// once the item ended) and branch, WorktreeSessionID the worktree's
	// name (map.isolation: worktree).
	WorktreePath      string `json:"worktree_path,omitempty"`
	BranchName        string `json:"branch_name,omitempty"`
	WorktreeSessionID string `json:"worktree_session_id,omitempty"`
	// JSONLogLocation is the item's log file: its agents' raw stream, or
	// its steps' output (itemLog).
	JSONLogLocation string `json:"json_log_location,omitempty"`

	ItemIndex  int             `json:"item_index"`
	Item       json.RawMessage `json:"item"`
	DurationMS int64           `json:"duration_ms"`
	// Kind is how the item failed (exit, timeout, merge_conflict...);
	// Skipped marks an item that on_item_failure: skip recorded as skipped.
	Kind    string `json:"kind,omitempty"`
	Skipped bool   `json:"skipped,omitempty"`
	// Usage is what the item's agents spent, all its attempts; absent
	// when none reported it.
	Usage *eventlog.AgentUsage `json:"usage,omitempty"`
}

// AgentStatus is Prodigy's AgentStatus as serde writes it: "Success",
// {"Failed": MSG} or "Timeout".
type AgentStatus struct {
	Failed  bool
	Timeout bool
	Message string // of Failed
}

// MarshalJSON writes s as Prodigy does.
func (s AgentStatus) MarshalJSON() ([]byte, error) {
	switch {
	case s.Timeout:
		return []byte(`"Timeout"`), nil
	case s.Failed:
		return json.Marshal(map[string]string{"Failed": s.Message})
	}
	return []byte(`"Success"`), nil
}

// UnmarshalJSON reads what MarshalJSON writes.
func (s *AgentStatus) UnmarshalJSON(data []byte) error {
	var word string
	if json.Unmarshal(data, &word) == nil {
		*s = AgentStatus{Timeout: word == "Timeout"}
		return nil
	}
	var failed struct{ Failed string }
	if err := json.Unmarshal(data, &failed); err != nil {
		return fmt.Errorf("agent status: %w", err)
	}
	*s = AgentStatus{Failed: true, Message: failed.Failed}
	return nil
}

// Duration is Rust's std::time::Duration as serde writes it.
type Duration struct {
	Secs  int64 `json:"secs"`
	Nanos int64 `json:"nanos"`
}

// durationOf returns d as serde writes a Duration.
func durationOf(d time.Duration) Duration {
	return Duration{Secs: int64(d / time.Second), Nanos: int64(d % time.Second)}
}

// entry is the result of an item that ended with out; failed is its last
// failure, nil for a success.
func (l *resultLog) entry(it *Item, out itemtask.Outcome, failed *itemtask.Failure) Result {
	r := Result{
		ItemID: it.ID, Output: out.Output, Commits: out.Commits, FilesModified: out.FilesModified,
		Duration: durationOf(out.Duration), WorktreePath: out.Worktree, BranchName: out.Branch,
		JSONLogLocation: l.itemLog(it), ItemIndex: it.Index, Item: it.Raw, DurationMS: out.Duration.Milliseconds(),
		Usage: out.Usage,
	}
	if r.Commits == nil {
		r.Commits = []string{}
	}
	if out.Worktree != "" {
		r.WorktreeSessionID = filepath.Base(out.Worktree)
	}
	if failed != nil {
		r.Status = AgentStatus{Failed: true, Message: failed.Message}
		if failed.Kind == retryv2.KindTimeout {
			r.Status = AgentStatus{Timeout: true}
		}
		r.Error, r.Kind = failed.Message, failed.Kind
	}
	return r
}

// resultLog appends each finished item's Result to results.jsonl, one
// write per item, before the item's state is recorded.
type resultLog struct {
	mu   sync.Mutex
	f    *appendfile.File
	buf  bytes.Buffer
	logs state.Layout // where the items' logs are
}

// openResults opens the results file at path, whose entries name the item
// logs in logs.
func openResults(path string, logs state.Layout) (*resultLog, error) {
	f, err := appendfile.Open(path)
	if err != nil {
		return nil, fmt.Errorf("results: %w", err)
	}
	return &resultLog{f: f, logs: logs}, nil
}

// itemLog is the absolute path (a reduce step may run in the job's
// worktree) of an item's log as Prodigy names it: the raw stream-json its
// claude: steps' agents wrote, else its output log (on NATS the output
// its workers sent back; their agents' stream stays on the worker); ""
// when it has neither.
func (l *resultLog) itemLog(it *Item) string {
	for _, p := range []string{l.logs.ItemStream(it.ID), l.logs.ItemLog(it.ID)} {
		path, err := filepath.Abs(p)
		if err != nil {
			return ""
		}
		if _, err := os.Stat(path); err == nil {
			return path
		}
	}
	return ""
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
// result of each item, in input order, copied from results.jsonl. It
// keeps the offset of each item's last line in one array (8 bytes an
// item, no Go value per item) and copies the lines in index order.
func writeResultsFile(from, to string) error {
	src, err := os.Open(from)
	if errors.Is(err, os.ErrNotExist) {
		return os.WriteFile(to, []byte("[]\n"), 0o600)
	}
	if err != nil {
		return fmt.Errorf("results: %w", err)
	}
	defer src.Close()
	last, err := lastResults(src)
	if err != nil {
		return err
	}
	if _, err := src.Seek(0, io.SeekStart); err != nil {
		return fmt.Errorf("results: %w", err)
	}
	dst, err := os.OpenFile(to+".tmp", os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("results: %w", err)
	}
	w := bufio.NewWriterSize(dst, 256<<10)
	w.WriteString("[")
	r := bufio.NewReaderSize(src, 256<<10)
	var pos int64
	first := true
	for _, at := range last {
		if at == 0 {
			continue
		}
		if at-1 != pos { // the lines are mostly in order: seek only when not
			if _, err := src.Seek(at-1, io.SeekStart); err != nil {
				dst.Close()
				return fmt.Errorf("results: %w", err)
			}
			r.Reset(src)
		}
		line, err := r.ReadBytes('\n')
		if err != nil {
			dst.Close()
			return fmt.Errorf("results: %w", err)
		}
		pos = at - 1 + int64(len(line))
		if !first {
			w.WriteString(",")
		}
		first = false
		w.WriteString("\n")
		w.Write(line[:len(line)-1])
	}
	w.WriteString("\n]\n")
	if err := errors.Join(w.Flush(), dst.Close()); err != nil {
		return fmt.Errorf("results: %w", err)
	}
	return os.Rename(to+".tmp", to)
}

// lastResults reads results.jsonl and returns, by item index, one past
// the offset of the item's last whole line (0: none). A torn last line
// is passed over.
func lastResults(src io.Reader) ([]int64, error) {
	var last []int64
	r := bufio.NewReaderSize(src, 256<<10)
	var off int64
	for {
		line, err := r.ReadBytes('\n')
		if len(line) > 0 && line[len(line)-1] == '\n' {
			var head struct {
				Index int `json:"item_index"`
			}
			if json.Unmarshal(line, &head) == nil && head.Index >= 0 {
				if head.Index >= len(last) {
					last = slices.Grow(last, head.Index+1-len(last))[:head.Index+1]
				}
				last[head.Index] = off + 1
			}
		}
		off += int64(len(line))
		if errors.Is(err, io.EOF) {
			return last, nil
		}
		if err != nil {
			return nil, fmt.Errorf("results: %w", err)
		}
	}
}
