package natscoord

import (
	"errors"
	"io/fs"

	"github.com/runnerdev/runner/internal/eventlog"
	"github.com/runnerdev/runner/internal/natsconn"
)

// recordedRuns reads the job's event log at path for the events that
// ended processes recorded of the runs of items (by item id), in their
// running attempts (their records): how many of each run (the highest
// "seq" of its "run_id"), by item index. An attempt's events follow its
// item_started.
func recordedRuns(path string, items map[string]*record) (map[int]runEvents, error) {
	recorded := map[int]runEvents{}
	current := map[string]int64{} // each item's attempt as the log goes
	err := eventlog.Scan(path, eventlog.Query{}, func(e eventlog.Event) error {
		it, ok := items[e.ItemID]
		switch {
		case !ok:
		case e.Type == eventlog.TypeItemStarted:
			current[e.ItemID] = e.Int("attempt")
		case current[e.ItemID] == int64(it.attempt):
			countRun(recorded, it, e)
		}
		return nil
	})
	if errors.Is(err, fs.ErrNotExist) {
		return recorded, nil
	}
	return recorded, err
}

// countRun counts e, an event of it's running attempt, in recorded when
// a run sent it.
func countRun(recorded map[int]runEvents, it *record, e eventlog.Event) {
	run, ok := natsconn.ParseRunID(e.Str("run_id"))
	if !ok {
		return
	}
	rec, ok := recorded[it.index]
	if !ok {
		rec = runEvents{attempt: it.attempt, seqs: map[natsconn.RunID]int{}}
		recorded[it.index] = rec
	}
	rec.seqs[run] = max(rec.seqs[run], int(e.Int("seq")))
}
