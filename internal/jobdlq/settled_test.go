package jobdlq

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"testing"

	"github.com/runnerdev/runner/dlq"
	"github.com/runnerdev/runner/internal/state"
)

// The stamp of a job's settled item counts lives in its metadata beside
// them: MarkSettled writes it there, and it holds until the DLQ or the
// item log changes (job.SetItemCounts drops it when the counts are
// written again).
func TestSettledStampLivesBesideTheCounts(t *testing.T) {
	store := state.Store{Dir: t.TempDir()}
	j, err := store.Create(state.Meta{ID: "j", File: "w.yml", Workflow: "w", Mode: "mapreduce",
		Status: state.Completed, Items: &state.ItemCounts{Total: 2, Failed: 1, DLQ: 1, Succeeded: 1}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Unlock()
	log := j.Layout().ItemStates
	if err := os.WriteFile(log, []byte("{}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	q := Open(context.Background(), "j", j.Layout().DLQ, io.Discard)
	defer q.Close()
	add := func(id string) {
		t.Helper()
		if err := q.Update(func(d *dlq.DB) error {
			return d.Add(dlq.Entry{JobID: "j", ItemID: id, Item: json.RawMessage(`1`), Failure: dlq.Failure{Kind: "exit", ExitCode: 1}})
		}); err != nil {
			t.Fatal(err)
		}
	}
	current := func() bool {
		t.Helper()
		meta, err := store.Open("j")
		if err != nil {
			t.Fatal(err)
		}
		d, err := OpenReader(j.Layout().DLQ)
		if err != nil {
			t.Fatal(err)
		}
		defer d.Close()
		s, err := d.Summary()
		if err != nil {
			t.Fatal(err)
		}
		return CountsCurrent(meta.Meta, s, log)
	}
	add("a")
	if err := q.MarkSettled(log, j.Update); err != nil {
		t.Fatal(err)
	}
	if !current() {
		t.Fatal("counts not current after MarkSettled")
	}
	add("b")
	if current() {
		t.Error("counts current after the DLQ changed")
	}
	if err := q.MarkSettled(log, j.Update); err != nil || !current() {
		t.Fatalf("stamped again: current %v, %v", current(), err)
	}
	if err := j.Update(func(m *state.Meta) { m.Items.Succeeded++ }); err != nil || !current() {
		t.Fatalf("another field written: current %v, %v", current(), err)
	}
	if err := os.WriteFile(log, []byte("{}\n{}\n"), 0o600); err != nil || current() {
		t.Errorf("counts current after the item log grew (%v)", err)
	}
}
