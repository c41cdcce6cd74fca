package dlq

import (
	"bytes"
	"encoding/json"
	"errors"
	"time"
)

// Limits on what one item keeps.
const (
	// MaxHistory is how many failures an item keeps (the most recent ones);
	// Item.FailureCount still counts all of them.
	MaxHistory = 100
	// MaxStderrTail is how many bytes of a failure's stderr are kept (the end).
	MaxStderrTail = 4 << 10
	// MaxMessage is how many bytes of a failure's message are kept (the start).
	MaxMessage = 4 << 10
)

// ErrNotFound is returned by Get for an item that is not in the queue.
var ErrNotFound = errors.New("not in the dead-letter queue")

// ErrLocked is returned (wrapped, with the path) by Open when another
// process holds the file for longer than Options.Timeout.
var ErrLocked = errors.New("locked by another process; try again")

// Failure is one failed attempt of an item.
type Failure struct {
	Attempt    int       `json:"attempt"` // which item attempt (1-based, counts dlq retries too)
	At         time.Time `json:"at"`
	Kind       string    `json:"kind"` // exit, signal, timeout, spawn, circuit_open, ...
	ExitCode   int       `json:"exit_code"`
	Message    string    `json:"message"`
	StderrTail string    `json:"stderr_tail"` // at most MaxStderrTail bytes (the tail)
	Step       string    `json:"step"`
	DurationMS int64     `json:"duration_ms"`
}

// Item is one work item in the queue with its failure history.
type Item struct {
	JobID          string          `json:"job_id"`
	ItemID         string          `json:"item_id"`
	ItemIndex      int             `json:"item_index"`
	Item           json.RawMessage `json:"item"` // the original JSON
	FailureCount   int             `json:"failure_count"`
	FirstFailure   time.Time       `json:"first_failure"`
	LastFailure    time.Time       `json:"last_failure"`
	ErrorSignature string          `json:"error_signature"` // of the last failure
	Failures       []Failure       `json:"failures"`        // oldest first, at most MaxHistory
}

// MarshalJSON writes the item with "failures" as [] (never null), a missing
// original item as null, and "<", ">", "&" unescaped (stderr is full of them).
func (it Item) MarshalJSON() ([]byte, error) {
	type plain Item // no methods: no recursion
	p := plain(it)
	if p.Failures == nil {
		p.Failures = []Failure{}
	}
	if len(p.Item) == 0 {
		p.Item = json.RawMessage("null")
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(p); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// Entry is one failure to record with Add.
type Entry struct {
	JobID     string
	ItemID    string
	ItemIndex int
	Item      json.RawMessage
	Failure   Failure
}
