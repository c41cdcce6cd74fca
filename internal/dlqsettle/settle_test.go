package dlqsettle

import (
	"path/filepath"
	"slices"
	"strconv"
	"testing"

	"github.com/runnerdev/runner/internal/eventlog"
	"github.com/runnerdev/runner/internal/job"
	"github.com/runnerdev/runner/internal/state"
	"github.com/runnerdev/runner/mapreduce/items"
)

// queue is a DLQ of item ids; those in held are leased to a running
// retry.
type queue struct{ queued, held map[string]bool }

func (q *queue) Queued(ids ...string) (map[string]bool, error) {
	out := map[string]bool{}
	for _, id := range ids {
		out[id] = q.queued[id]
	}
	return out, nil
}

func (q *queue) Remove(ids ...string) error {
	for _, id := range ids {
		delete(q.queued, id)
	}
	return nil
}

func (q *queue) Claim(id string) (bool, error) { return !q.held[id], nil }

// ids are the ids queued, in order.
func (q *queue) ids() []string {
	var out []string
	for id, in := range q.queued {
		if in {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return out
}

// SettleDLQ repairs what a retry or purge killed between its two writes
// leaves, and counts each item once.
func TestSettleDLQ(t *testing.T) {
	j, err := state.Store{Dir: filepath.Join(t.TempDir(), "state")}.Create(state.Meta{ID: "t", File: "w.yml"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	q := &queue{queued: map[string]bool{}, held: map[string]bool{"item_1": true}}
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
			q.queued[id] = true
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
	if ids := q.ids(); !slices.Equal(ids, []string{"item_1", "item_3", "item_4"}) {
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

// Purged items count as skipped, each with a dlq_removed event, and the
// job's counts follow.
func TestRecordPurged(t *testing.T) {
	st, err := state.Store{Dir: filepath.Join(t.TempDir(), "state")}.Create(state.Meta{ID: "t", File: "w.yml", Items: &job.ItemCounts{Total: 2, Failed: 2, DLQ: 2}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	q := &queue{queued: map[string]bool{}}
	for i, id := range []string{"a", "b"} {
		st.AppendItemRecords(job.ItemRecord{Index: i, ID: id, State: job.ItemDLQ})
		q.queued[id] = true
	}
	q.Remove("a") // what dlq purge took out
	if err := RecordPurged(job.Stored{Job: st}, q, []*items.Item{{Index: 0, ID: "a"}}); err != nil {
		t.Fatal(err)
	}
	states, _ := st.ReadItemStates()
	if rec := states[0]; rec.State != job.ItemSkipped || rec.Error != PurgedNote {
		t.Errorf("purged item's record %+v", rec)
	}
	events, err := eventlog.Read(st.Layout().Events, eventlog.Query{})
	if err != nil || len(events) != 1 || events[0].Type != eventlog.TypeDLQRemoved || events[0].ItemID != "a" || events[0].Str("reason") != "purged" {
		t.Errorf("events %+v, %v", events, err)
	}
	if want := (job.ItemCounts{Total: 2, Failed: 2, DLQ: 1, Skipped: 1}); *st.Meta.Items != want {
		t.Errorf("counts %+v, want %+v", *st.Meta.Items, want)
	}
}
