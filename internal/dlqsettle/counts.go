package dlqsettle

import (
	"github.com/runnerdev/runner/internal/state"
)

// SettledCounts returns the item counts of a job that no process holds as
// Settle would leave them, without writing anything: from its item log's
// states (read through its index) and the items in its DLQ (q). counts
// gives Total and Failed, which stay. A retry killed after it logged an
// item's success leaves the item queued, and its metadata with the
// counts of its start: the item counts as succeeded (Settle removes it),
// and one logged as in the DLQ that is no longer there as skipped (a
// purge killed before it logged it).
func SettledCounts(states *state.ItemStates, q Lister, counts state.ItemCounts) (state.ItemCounts, error) {
	t, err := tallyQueue(states, q)
	if err != nil {
		return counts, err
	}
	counts.Succeeded = states.Count(state.ItemSucceeded)
	counts.DLQ = t.dlq() - t.logged[state.ItemSucceeded]
	counts.Skipped = states.Count(state.ItemSkipped) + states.Count(state.ItemDLQ) - t.logged[state.ItemSkipped] - t.logged[state.ItemDLQ]
	counts.Pending = max(counts.Total-counts.Succeeded-counts.DLQ-counts.Skipped, 0)
	return counts, nil
}
