package dlqsettle

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/runnerdev/runner/internal/eventlog"
	"github.com/runnerdev/runner/internal/items"
	"github.com/runnerdev/runner/internal/job"
	"github.com/runnerdev/runner/internal/state"
)

// queue is a DLQ of item ids (item_N, at index N); those in held are
// leased to a running retry.
type queue struct{ queued, held map[string]bool }

func (q *queue) Each(fn func(id string, index int)) error {
	for _, id := range q.ids() {
		n, _ := strconv.Atoi(strings.TrimPrefix(id, "item_"))
		fn(id, n)
	}
	return nil
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
		{state.ItemSucceeded, true}, // a retry killed before the removal
		{state.ItemSucceeded, true}, // the same, but a running retry holds it
		{state.ItemDLQ, false},      // a purge killed before the log
		{state.ItemDLQ, true},
		{state.ItemRunning, true},  // in a retry now, or killed in one
		{state.ItemRunning, false}, // a job's pending item
		{state.ItemSkipped, false},
		{"", false}, // never started
	}
	var itemsFile strings.Builder
	for i, r := range recs {
		id := "item_" + strconv.Itoa(i)
		fmt.Fprintf(&itemsFile, "{\"i\":%d,\"id\":%q,\"item\":%d}\n", i, id, i)
		if r.st != "" {
			if err := j.AppendItemRecords(state.ItemRecord{Index: i, ID: id, State: r.st}); err != nil {
				t.Fatal(err)
			}
		}
		if r.queued {
			q.queued[id] = true
		}
	}
	if err := os.WriteFile(j.Layout().Items, []byte(itemsFile.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := SettleDLQ(j, q, state.ItemCounts{Total: len(recs), Failed: 5})
	if err != nil {
		t.Fatal(err)
	}
	want := state.ItemCounts{Total: 8, Succeeded: 1, Failed: 5, Skipped: 2, DLQ: 3, Pending: 2}
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
	if rec := states[2]; rec.State != state.ItemSkipped || rec.Error != PurgedNote {
		t.Errorf("purged item's record %+v", rec)
	}
}

// Purged items count as skipped, each with a dlq_removed event, and the
// job's counts follow.
func TestRecordPurged(t *testing.T) {
	st, err := state.Store{Dir: filepath.Join(t.TempDir(), "state")}.Create(state.Meta{ID: "t", File: "w.yml", Items: &state.ItemCounts{Total: 2, Failed: 2, DLQ: 2}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	q := &queue{queued: map[string]bool{}}
	for i, id := range []string{"item_0", "item_1"} {
		st.AppendItemRecords(state.ItemRecord{Index: i, ID: id, State: state.ItemDLQ})
		q.queued[id] = true
	}
	q.Remove("item_0") // what dlq purge took out
	if err := RecordPurged(job.Stored{Job: st}, q, []*items.Item{{Index: 0, ID: "item_0"}}); err != nil {
		t.Fatal(err)
	}
	states, _ := st.ReadItemStates()
	if rec := states[0]; rec.State != state.ItemSkipped || rec.Error != PurgedNote {
		t.Errorf("purged item's record %+v", rec)
	}
	events, err := eventlog.Read(st.Layout().Events, eventlog.Query{})
	if err != nil || len(events) != 1 || events[0].Type != eventlog.TypeDLQRemoved || events[0].ItemID != "item_0" || events[0].Str("reason") != "purged" {
		t.Errorf("events %+v, %v", events, err)
	}
	if want := (state.ItemCounts{Total: 2, Failed: 2, DLQ: 1, Skipped: 1}); *st.Meta.Items != want {
		t.Errorf("counts %+v, want %+v", *st.Meta.Items, want)
	}
}

// Settling reads the item log through its index: the lines the index
// covers are not read again (here made unreadable, which failed it when
// it read the whole log).
func TestSettleReadsTheLogThroughItsIndex(t *testing.T) {
	j, err := state.Store{Dir: filepath.Join(t.TempDir(), "state")}.Create(state.Meta{ID: "t", File: "w.yml"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	log, err := j.OpenItemLog()
	if err != nil {
		t.Fatal(err)
	}
	for i, st := range []string{state.ItemSucceeded, state.ItemDLQ, state.ItemSucceeded} {
		if err := log.Append(state.ItemRecord{Index: i, ID: "item_" + strconv.Itoa(i), State: st}); err != nil {
			t.Fatal(err)
		}
	}
	if err := log.Close(); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(j.Layout().ItemStates)
	if err != nil {
		t.Fatal(err)
	}
	copy(data, strings.Repeat("x", strings.IndexByte(string(data), '\n')))
	if err := os.WriteFile(j.Layout().ItemStates, data, 0o600); err != nil {
		t.Fatal(err)
	}
	q := &queue{queued: map[string]bool{"item_1": true}}
	got, err := SettleDLQ(j, q, state.ItemCounts{Total: 3, Failed: 1})
	if want := (state.ItemCounts{Total: 3, Failed: 1, Succeeded: 2, DLQ: 1}); err != nil || got != want {
		t.Errorf("counts %+v, %v; want %+v", got, err, want)
	}
}
