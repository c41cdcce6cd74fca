package dlqsettle

import (
	"github.com/runnerdev/runner/internal/eventlog"
	"github.com/runnerdev/runner/internal/job"
	"github.com/runnerdev/runner/mapreduce/items"
)

// Queue is a job's DLQ as settling uses it (a mapreduce.RetryQueue).
type Queue interface {
	// Queued reports which of the given items are in the queue.
	Queued(itemIDs ...string) (map[string]bool, error)
	// Remove deletes the given items if they are queued.
	Remove(itemIDs ...string) error
	// Claim leases a queued item to this process; false when another
	// process (a running dlq retry) holds it.
	Claim(itemID string) (bool, error)
}

// ItemStates is a job's item log as SettleDLQ reads and amends it: the
// item files of a job this process holds, or a *state.Job that no process
// runs.
type ItemStates interface {
	ReadItemStates() (map[int]job.ItemRecord, error)
	AppendItemRecords(recs ...job.ItemRecord) error
}

// Settleable is a job whose item log and counts Settle brings up to date
// with its DLQ: the item files of a job this process holds, or a
// job.Stored.
type Settleable interface {
	ItemStates
	UpdateItemCounts(settle func(job.ItemCounts) (job.ItemCounts, error)) (job.ItemCounts, error)
}

// Settle reconciles a MapReduce job's item log with its DLQ (SettleDLQ)
// and rewrites the job's counts to match (see UpdateItemCounts). It
// returns the counts.
func Settle(j Settleable, q Queue) (job.ItemCounts, error) {
	return j.UpdateItemCounts(func(c job.ItemCounts) (job.ItemCounts, error) { return SettleDLQ(j, q, c) })
}

// RecordPurged records items that `dlq purge` took out of a job's DLQ:
// each counts as skipped from now on (PurgedNote), with a dlq_removed
// event, and the job's counts are settled with its DLQ. Should it be
// killed before this, the next settle records them the same way.
func RecordPurged(j job.Stored, q Queue, items []*items.Item) error {
	recs := make([]job.ItemRecord, len(items))
	events := make([]eventlog.Event, len(items))
	for i, it := range items {
		recs[i] = job.ItemRecord{Index: it.Index, ID: it.ID, State: job.ItemSkipped, Error: PurgedNote}
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
func SettleDLQ(j ItemStates, q Queue, counts job.ItemCounts) (job.ItemCounts, error) {
	records, err := j.ReadItemStates()
	if err != nil {
		return counts, err
	}
	ids := make([]string, 0, len(records))
	for _, rec := range records {
		ids = append(ids, rec.ID)
	}
	queued, err := q.Queued(ids...)
	if err != nil {
		return counts, err
	}
	var purged []job.ItemRecord
	for i, rec := range records {
		switch {
		case rec.State == job.ItemSucceeded && queued[rec.ID]:
			if ok, err := q.Claim(rec.ID); err != nil || !ok {
				if err != nil {
					return counts, err
				}
				continue // a running retry has it
			}
			if err := q.Remove(rec.ID); err != nil {
				return counts, err
			}
			queued[rec.ID] = false
		case rec.State == job.ItemDLQ && !queued[rec.ID]:
			rec.State, rec.Error = job.ItemSkipped, PurgedNote
			purged = append(purged, rec)
			records[i] = rec
		}
	}
	if err := j.AppendItemRecords(purged...); err != nil {
		return counts, err
	}
	counts.Succeeded, counts.DLQ, counts.Skipped = 0, 0, 0
	for _, rec := range records {
		switch {
		case queued[rec.ID]:
			counts.DLQ++
		case rec.State == job.ItemSucceeded:
			counts.Succeeded++
		case rec.State == job.ItemSkipped:
			counts.Skipped++
		}
	}
	counts.Pending = max(counts.Total-counts.Succeeded-counts.DLQ-counts.Skipped, 0)
	return counts, nil
}
