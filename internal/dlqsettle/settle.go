package dlqsettle

import (
	"github.com/runnerdev/runner/internal/eventlog"
	"github.com/runnerdev/runner/internal/items"
	"github.com/runnerdev/runner/internal/job"
	"github.com/runnerdev/runner/internal/state"
)

// Queue is a job's DLQ as settling uses it (a mapreduce.RetryQueue).
type Queue interface {
	Lister
	// Remove deletes the given items if they are queued.
	Remove(itemIDs ...string) error
	// Claim leases a queued item to this process; false when another
	// process (a running dlq retry) holds it.
	Claim(itemID string) (bool, error)
}

// Lister lists a DLQ's items.
type Lister interface {
	// Each calls fn with every queued item's id and index.
	Each(fn func(itemID string, index int)) error
}

// ItemStates is a job's item log as SettleDLQ reads (through its index,
// state.ItemStates) and amends it, and its items file, which names the
// items: the item files of a job this process holds, or a *state.Job
// that no process runs.
type ItemStates interface {
	LoadItemStates() (*state.ItemStates, error)
	AppendItemRecords(recs ...state.ItemRecord) error
	Layout() state.Layout
}

// Settleable is a job whose item log and counts Settle brings up to date
// with its DLQ: the item files of a job this process holds, or a
// job.Stored.
type Settleable interface {
	ItemStates
	UpdateItemCounts(settle func(state.ItemCounts) (state.ItemCounts, error)) (state.ItemCounts, error)
}

// Settle reconciles a MapReduce job's item log with its DLQ (SettleDLQ)
// and rewrites the job's counts to match (see UpdateItemCounts). It
// returns the counts.
func Settle(j Settleable, q Queue) (state.ItemCounts, error) {
	return j.UpdateItemCounts(func(c state.ItemCounts) (state.ItemCounts, error) { return SettleDLQ(j, q, c) })
}

// RecordPurged records items that `dlq purge` took out of a job's DLQ:
// each counts as skipped from now on (PurgedNote), with a dlq_removed
// event, and the job's counts are settled with its DLQ. Should it be
// killed before this, the next settle records them the same way.
func RecordPurged(j job.Stored, q Queue, items []*items.Item) error {
	recs := make([]state.ItemRecord, len(items))
	events := make([]eventlog.Event, len(items))
	for i, it := range items {
		recs[i] = state.ItemRecord{Index: it.Index, ID: it.ID, State: state.ItemSkipped, Error: PurgedNote}
		events[i] = eventlog.DLQRemoved(it.ID, "purged")
	}
	if err := j.AppendItemRecords(recs...); err != nil {
		return err
	}
	if err := j.Emit(events...); err != nil {
		return err
	}
	_, err := Settle(j, q)
	return err
}

// PurgedNote is the error of the skipped record of an item purged from
// the DLQ.
const PurgedNote = "purged from the DLQ"

// SettleDLQ brings a job's item log and its DLQ into agreement after a
// `dlq retry` or `dlq purge` that was killed between its two writes, and
// returns the job's item counts as they are now (counts gives Total and
// Failed, which stay: failed counts the items that finally failed in the
// job's run, whatever became of them since).
//
//   - An item logged as succeeded that is still queued: a retry logs the
//     success before it removes the item, so it is removed now (unless a
//     running retry holds it), instead of being run again.
//   - An item logged as in the DLQ that is no longer queued: a purge
//     removes items before it logs them as skipped, so it is logged now.
//
// Then each item is exactly one of: in the DLQ (whatever its last record,
// e.g. running in a retry), succeeded, skipped, or pending, and these add
// up to Total.
func SettleDLQ(j ItemStates, q Queue, counts state.ItemCounts) (state.ItemCounts, error) {
	states, err := j.LoadItemStates()
	if err != nil {
		return counts, err
	}
	t, err := tallyQueue(states, q)
	if err != nil {
		return counts, err
	}
	for _, it := range t.succeeded {
		if ok, err := q.Claim(it.ID); err != nil || !ok {
			if err != nil {
				return counts, err
			}
			continue // a running retry has it
		}
		if err := q.Remove(it.ID); err != nil {
			return counts, err
		}
		t.take(it.Index, state.ItemSucceeded)
	}
	var purged []state.ItemRecord
	if t.logged[state.ItemDLQ] < states.Count(state.ItemDLQ) {
		lost := func(index int) bool { return states.State(index) == state.ItemDLQ && !t.has(index) }
		err := items.ReadUnless(j.Layout().Items, func(index int) bool { return !lost(index) }, func(it *items.Item) (bool, error) {
			purged = append(purged, state.ItemRecord{Index: it.Index, ID: it.ID, State: state.ItemSkipped, Error: PurgedNote})
			return true, nil
		})
		if err != nil {
			return counts, err
		}
	}
	if err := j.AppendItemRecords(purged...); err != nil {
		return counts, err
	}
	counts.Succeeded = states.Count(state.ItemSucceeded) - t.logged[state.ItemSucceeded]
	counts.Skipped = states.Count(state.ItemSkipped) - t.logged[state.ItemSkipped] + len(purged)
	counts.DLQ = t.dlq()
	counts.Pending = max(counts.Total-counts.Succeeded-counts.DLQ-counts.Skipped, 0)
	return counts, nil
}

// tally is a DLQ against the item log's states: a bit per item index for
// the items it holds, how many of them the log has in each state, and
// those the log has as succeeded.
type tally struct {
	bits      []uint64
	logged    map[string]int
	succeeded []items.Item
}

// tallyQueue lists q against states.
func tallyQueue(states *state.ItemStates, q Lister) (*tally, error) {
	t := &tally{logged: map[string]int{}}
	err := q.Each(func(id string, index int) {
		if index < 0 {
			return
		}
		for len(t.bits) <= index/64 {
			t.bits = append(t.bits, 0)
		}
		t.bits[index/64] |= 1 << (index % 64)
		st := states.State(index)
		t.logged[st]++
		if st == state.ItemSucceeded {
			t.succeeded = append(t.succeeded, items.Item{Index: index, ID: id})
		}
	})
	return t, err
}

// has reports whether the DLQ holds the item at index.
func (t *tally) has(index int) bool {
	return index >= 0 && index/64 < len(t.bits) && t.bits[index/64]&(1<<(index%64)) != 0
}

// take notes that the item at index, logged as st, left the DLQ.
func (t *tally) take(index int, st string) {
	t.bits[index/64] &^= 1 << (index % 64)
	t.logged[st]--
}

// dlq is how many items the DLQ holds that the item log has a record of.
func (t *tally) dlq() int {
	n := 0
	for st, c := range t.logged {
		if st != "" {
			n += c
		}
	}
	return n
}
