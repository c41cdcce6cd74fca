package mapreduce

import (
	"path/filepath"
	"strconv"
	"testing"

	"github.com/runnerdev/runner/job"
	"github.com/runnerdev/runner/state"
)

// heldDLQ is a fakeDLQ whose items in held are leased to a running retry.
type heldDLQ struct {
	*fakeDLQ
	held map[string]bool
}

func (q heldDLQ) Claim(id string) (bool, error) { return !q.held[id], nil }
func (q heldDLQ) Release(string) error          { return nil }

// SettleDLQ repairs what a retry or purge killed between its two writes
// leaves, and counts each item once.
func TestSettleDLQ(t *testing.T) {
	j, err := state.Store{Dir: filepath.Join(t.TempDir(), "state")}.Create(state.Meta{ID: "t", File: "w.yml"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	q := heldDLQ{newFakeDLQ(), map[string]bool{"item_1": true}}
	recs := []struct {
		st     string
		queued bool
	}{
		{job.ItemSucceeded, true}, // a retry killed before the removal
		{job.ItemSucceeded, true}, // the same, but a running retry holds it
		{job.ItemDLQ, false},      // a purge killed before the log
		{job.ItemDLQ, true},
		{job.ItemRunning, true},  // in a retry now, or killed in one
		{job.ItemRunning, false}, // a job's pending item
		{job.ItemSkipped, false},
		{"", false}, // never started
	}
	for i, r := range recs {
		id := "item_" + strconv.Itoa(i)
		if r.st != "" {
			if err := j.AppendItemRecords(job.ItemRecord{Index: i, ID: id, State: r.st}); err != nil {
				t.Fatal(err)
			}
		}
		if r.queued {
			q.Add(DeadLetter{ItemID: id, ItemIndex: i})
		}
	}
	got, err := SettleDLQ(j, q, job.ItemCounts{Total: len(recs), Failed: 5})
	if err != nil {
		t.Fatal(err)
	}
	want := job.ItemCounts{Total: 8, Succeeded: 1, Failed: 5, Skipped: 2, DLQ: 3, Pending: 2}
	if got != want {
		t.Errorf("counts %+v, want %+v", got, want)
	}
	if ids := q.ids(); len(ids) != 3 || ids[0] != "item_1" {
		t.Errorf("DLQ holds %v, want item_1, item_3, item_4", ids)
	}
	states, err := j.ReadItemStates()
	if err != nil {
		t.Fatal(err)
	}
	if rec := states[2]; rec.State != job.ItemSkipped || rec.Error != PurgedNote {
		t.Errorf("purged item's record %+v", rec)
	}
}
