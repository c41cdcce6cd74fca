package mapreduce

import (
	"encoding/json"
	"time"
)

// DeadLetters is where items that finally failed are kept: the job's
// bbolt DLQ in runner, a map in tests.
type DeadLetters interface {
	// Add records items with their failures; they are durable when Add
	// returns. An item already queued gets the failures appended.
	Add(items ...DeadLetter) error
	// Remove deletes the given items if they are queued.
	Remove(itemIDs ...string) error
	// Queued reports which of the given items are in the queue.
	Queued(itemIDs ...string) (map[string]bool, error)
}

// Claimer leases queued items to one `dlq retry` process, so that two of
// them never run the same item.
type Claimer interface {
	Claim(itemID string) (bool, error)
	Release(itemID string) error
}

// DeadLetter is an item and the failures to record for it.
type DeadLetter struct {
	ItemID    string
	ItemIndex int
	Item      json.RawMessage
	Failures  []Failure
}

// Failure is one failed run of an item's agent template.
type Failure struct {
	Attempt    int // item-level attempt, from 1; 0 = next in the item's history
	At         time.Time
	Kind       string // exit, signal, timeout, spawn, circuit_open
	ExitCode   int
	Message    string
	StderrTail string
	Step       string
	Duration   time.Duration
}
