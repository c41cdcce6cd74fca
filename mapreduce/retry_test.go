package mapreduce

import (
	"context"
	"path/filepath"
	"slices"
	"strconv"
	"testing"

	"github.com/runnerdev/runner/internal/eventlog"
	"github.com/runnerdev/runner/internal/job"
	"github.com/runnerdev/runner/internal/state"
	"github.com/runnerdev/runner/retryv2"
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

// dlq retry: an item a killed retry ran to success leaves the DLQ without
// running again; of the selected items, one that succeeds leaves the DLQ
// and one that fails again stays, with the failure added to its history.
func TestRetryDLQ(t *testing.T) {
	j := startJob(t, 4, 2, "")
	q := heldDLQ{newFakeDLQ(), nil}
	failAll := agentFunc(func(ctx context.Context, it *Item, attempt int, slot retryv2.Slot) Outcome {
		if it.Index == 0 {
			return Outcome{}
		}
		return failed("first run")
	})
	if _, err := runMap(t.Context(), j, nil, Options{DLQ: q, Dispatcher: failAll.backend()}); err != nil {
		t.Fatal(err)
	}
	// A retry killed after it logged item 3's success, before it removed
	// the item from the DLQ.
	if err := filesOf(j).AppendItemRecords(job.ItemRecord{Index: 3, ID: "3", State: job.ItemSucceeded}); err != nil {
		t.Fatal(err)
	}
	var ran []string
	again := agentFunc(func(ctx context.Context, it *Item, attempt int, slot retryv2.Slot) Outcome {
		ran = append(ran, it.ID)
		if it.ID == "2" {
			return failed("second run")
		}
		return Outcome{}
	})
	res, err := RetryDLQ(t.Context(), j, q, RetryOptions{
		MaxParallel: 1,
		Dispatcher:  again.backend(),
		Select: func() ([]*Item, error) {
			var items []*Item
			for _, id := range q.ids() {
				dl := q.items[id]
				items = append(items, &Item{Index: dl.ItemIndex, ID: id, Raw: []byte(`"` + id + `"`), Value: id})
			}
			return items, nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := (RetryResult{Selected: 2, Succeeded: 1, Failed: 1, Remaining: 1}); res != want {
		t.Errorf("result %+v, want %+v", res, want)
	}
	if !slices.Equal(ran, []string{"1", "2"}) {
		t.Errorf("ran %v, want items 1 and 2 (3 had succeeded already)", ran)
	}
	if f := q.items["2"].Failures; len(f) != 2 || f[1].Message != "second run" {
		t.Errorf("item 2's failures %+v", f)
	}
	if m := j.Meta(); m.Items == nil || m.Items.DLQ != 1 || m.Items.Succeeded != 3 {
		t.Errorf("job counts %+v", m.Items)
	}
}

// Purged items count as skipped, each with a dlq_removed event, and the
// job's counts follow.
func TestRecordPurged(t *testing.T) {
	st, err := state.Store{Dir: filepath.Join(t.TempDir(), "state")}.Create(state.Meta{ID: "t", File: "w.yml", Items: &job.ItemCounts{Total: 2, Failed: 2, DLQ: 2}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	q := heldDLQ{newFakeDLQ(), nil}
	for i, id := range []string{"a", "b"} {
		st.AppendItemRecords(job.ItemRecord{Index: i, ID: id, State: job.ItemDLQ})
		q.Add(DeadLetter{ItemID: id, ItemIndex: i})
	}
	q.Remove("a") // what dlq purge took out
	if err := RecordPurged(job.Stored{Job: st}, q, []*Item{{Index: 0, ID: "a"}}); err != nil {
		t.Fatal(err)
	}
	states, _ := st.ReadItemStates()
	if rec := states[0]; rec.State != job.ItemSkipped || rec.Error != PurgedNote {
		t.Errorf("purged item's record %+v", rec)
	}
	events, err := eventlog.Read(st.EventsPath(), eventlog.Query{})
	if err != nil || len(events) != 1 || events[0].Type != eventlog.TypeDLQRemoved || events[0].ItemID != "a" || events[0].Str("reason") != "purged" {
		t.Errorf("events %+v, %v", events, err)
	}
	if want := (job.ItemCounts{Total: 2, Failed: 2, DLQ: 1, Skipped: 1}); *st.Meta.Items != want {
		t.Errorf("counts %+v, want %+v", *st.Meta.Items, want)
	}
}
