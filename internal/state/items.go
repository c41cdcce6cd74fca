package state

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/runnerdev/runner/internal/appendfile"
	"github.com/runnerdev/runner/internal/eventlog"
)

// Item states of a MapReduce job. An item with no record, or whose last
// record is ItemRunning, is pending.
const (
	ItemRunning   = "running"
	ItemSucceeded = "succeeded"
	ItemDLQ       = "dlq"
	ItemSkipped   = "skipped"
)

// ItemRecord is one line of items-state.jsonl: an item state change or,
// with Step set and no State, a checkpoint of a running item's attempt: a
// template step that finished or waits to retry.
type ItemRecord struct {
	Index      int    `json:"i"`
	ID         string `json:"id"`
	State      string `json:"s,omitempty"`
	Attempt    int    `json:"a,omitempty"`  // item-level attempt
	DurationMS int64  `json:"ms,omitempty"` // finished states
	Error      string `json:"e,omitempty"`  // the final failure, for dlq/skipped
	// Running after an item-level retry decision: the attempt starts no
	// earlier, and the failures of the earlier attempts (a JSON list).
	// Spent is what the agents of those attempts spent, counted toward the
	// item's budget (budget.item_max_cost_usd, item_max_tokens).
	Due      time.Time            `json:"due,omitzero"`
	Failures json.RawMessage      `json:"f,omitempty"`
	Spent    *eventlog.AgentUsage `json:"u,omitempty"`
	Step     *StepRecord          `json:"step,omitempty"` // a checkpoint

	// Steps are, for an item last seen running, the checkpoints of its
	// current attempt in order (filled by ReadItemStates).
	Steps []StepRecord `json:"-"`
}

// ItemLog appends item state changes with one write each (the change
// reaches the kernel before Append returns) and fsyncs in the background
// at most every SyncEvery, so that a crash loses no acknowledged state
// change that the kernel had and per-item cost stays one write. It keeps
// the items' states (ItemStates) as it appends and, after a sync at most
// every IndexEvery and when it closes, writes them to the log's index
// (Layout.ItemIndex) as of the synced offset, so that the next reader
// decodes only what came after.
type ItemLog struct {
	mu      sync.Mutex
	f       *appendfile.File
	index   string // the index's path
	buf     []byte
	dirty   bool
	stop    chan struct{}
	stopped chan struct{}
	err     error

	states *ItemStates
	// offset is the end of the log as this ItemLog knows it; a log that
	// grew by other writers' lines (foreign) gets no index from it, since
	// its states lack them.
	offset  int64
	foreign bool
	indexed time.Time // the last index written
	indexOf int64     // the offset it was written at
}

// SyncEvery is how often an ItemLog fsyncs while changes arrive;
// IndexEvery how often at most it writes its index.
const (
	SyncEvery  = 200 * time.Millisecond
	IndexEvery = 2 * time.Second
)

// OpenItemLog opens the job's item state log for appending, with its
// items' states read (States).
func (j *Job) OpenItemLog() (*ItemLog, error) {
	layout := j.Layout()
	f, err := appendfile.Open(layout.ItemStates)
	if err != nil {
		return nil, fmt.Errorf("item log: %w", err)
	}
	size, err := f.Size()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("item log: %w", err)
	}
	states, off, err := loadItemStates(layout, size)
	if err != nil {
		f.Close()
		return nil, err
	}
	l := &ItemLog{f: f, index: layout.ItemIndex, stop: make(chan struct{}), stopped: make(chan struct{}),
		states: states, offset: off, foreign: off != size, indexed: time.Now(), indexOf: off}
	go l.syncLoop()
	return l, nil
}

// States returns a copy of the items' states as the log has them now.
func (l *ItemLog) States() *ItemStates {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.states.clone()
}

// Append records one change.
func (l *ItemLog) Append(rec ItemRecord) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err != nil {
		return l.err
	}
	line, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	l.buf = append(append(l.buf[:0], line...), '\n')
	if _, err := l.f.Write(l.buf); err != nil {
		l.err = fmt.Errorf("item log: %w", err)
		return l.err
	}
	l.dirty = true
	l.offset += int64(len(l.buf))
	if rec.Step != nil {
		step := *rec.Step
		rec.Step = &step
	}
	l.states.apply(rec)
	return nil
}

func (l *ItemLog) syncLoop() {
	defer close(l.stopped)
	t := time.NewTicker(SyncEvery)
	defer t.Stop()
	for {
		select {
		case <-l.stop:
			return
		case <-t.C:
			l.mu.Lock()
			l.syncLocked()
			index := l.indexLocked(false)
			l.mu.Unlock()
			l.writeIndex(index)
		}
	}
}

// syncLocked fsyncs what was appended since the last sync; l.mu is held.
func (l *ItemLog) syncLocked() {
	if l.dirty && l.err == nil {
		l.dirty = false
		if err := l.f.Sync(); err != nil {
			l.err = fmt.Errorf("item log: %w", err)
		}
	}
}

// indexLocked returns the index to write as of the synced offset, nil
// when none is due (now: whatever the time) or the log is not wholly
// this ItemLog's; l.mu is held.
func (l *ItemLog) indexLocked(now bool) []byte {
	if l.err != nil || l.dirty || l.foreign || l.offset == l.indexOf || !now && time.Since(l.indexed) < IndexEvery {
		return nil
	}
	if size, err := l.f.Size(); err != nil || size != l.offset {
		l.foreign = true // another process appended: our states lack its lines
		return nil
	}
	data, err := encodeItemIndex(l.states, l.offset)
	if err != nil {
		return nil
	}
	l.indexed, l.indexOf = time.Now(), l.offset
	return data
}

// writeIndex replaces the index with data (nil: nothing to write). An
// index that cannot be written only makes the next reader decode more
// of the log, so the error is dropped.
func (l *ItemLog) writeIndex(data []byte) {
	if data != nil {
		_ = writeAtomic(l.index, data)
	}
}

// Close syncs the log, writes its index and closes it.
func (l *ItemLog) Close() error {
	close(l.stop)
	<-l.stopped
	l.mu.Lock()
	defer l.mu.Unlock()
	serr := l.f.Sync()
	if serr == nil {
		l.dirty = false
		l.writeIndex(l.indexLocked(true))
	}
	if err := l.f.Close(); err != nil {
		return err
	}
	if l.err != nil {
		return l.err
	}
	return serr
}

// AppendItemRecords adds records to the item log, synced when it returns.
func (j *Job) AppendItemRecords(recs ...ItemRecord) error {
	if len(recs) == 0 {
		return nil
	}
	l, err := j.OpenItemLog()
	if err != nil {
		return err
	}
	for _, rec := range recs {
		if err := l.Append(rec); err != nil {
			l.Close()
			return err
		}
	}
	return l.Close()
}

// ReadItemStates returns the last recorded state of every item, by index,
// with the checkpoints of the items last seen running.
func (j *Job) ReadItemStates() (map[int]ItemRecord, error) {
	out := map[int]ItemRecord{}
	err := readLines(j.Layout().ItemStates, func(line []byte) error {
		rec, err := decodeItemRecord(line)
		if err != nil {
			return err
		}
		if rec.Step == nil {
			out[rec.Index] = rec
			return nil
		}
		if cur := out[rec.Index]; cur.State == ItemRunning && cur.Attempt == rec.Attempt {
			cur.Steps = append(cur.Steps, *rec.Step)
			out[rec.Index] = cur
		}
		return nil
	})
	return out, err
}

// readLines calls fn for each complete line of a JSON Lines file; a
// missing file has no lines and a final line without newline (a write cut
// short by a crash) is ignored.
func readLines(path string, fn func([]byte) error) error {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 64<<10)
	for n := 1; ; n++ {
		line, err := r.ReadBytes('\n')
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if line = bytes.TrimSpace(line); len(line) == 0 {
			continue
		}
		if err := fn(line); err != nil {
			return fmt.Errorf("%s:%d: damaged record: %w", path, n, err)
		}
	}
}
