package dlqsettle

import "github.com/runnerdev/runner/internal/job"

// SettledCounts returns the item counts of a job that no process holds as
// Settle would leave them, without writing anything: from its item log
// (records) and the ids in its DLQ (queued). counts gives Total and
// Failed, which stay. A retry killed after it logged an item's success
// leaves the item queued, and its metadata with the counts of its start:
// the item counts as succeeded (Settle removes it), and one logged as in
// the DLQ that is no longer there as skipped (a purge killed before it
// logged it).
func SettledCounts(records map[int]job.ItemRecord, queued map[string]bool, counts job.ItemCounts) job.ItemCounts {
	counts.Succeeded, counts.DLQ, counts.Skipped = 0, 0, 0
	for _, rec := range records {
		switch {
		case rec.State == job.ItemSucceeded:
			counts.Succeeded++
		case queued[rec.ID]:
			counts.DLQ++
		case rec.State == job.ItemSkipped, rec.State == job.ItemDLQ:
			counts.Skipped++
		}
	}
	counts.Pending = max(counts.Total-counts.Succeeded-counts.DLQ-counts.Skipped, 0)
	return counts
}
