package mapreduce

import (
	"encoding/json"

	"github.com/runnerdev/runner/internal/itemtask"
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
	// Each calls fn with every queued item's id and index.
	Each(fn func(itemID string, index int)) error
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
	Failures  []itemtask.Failure
}
