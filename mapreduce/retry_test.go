package mapreduce

import (
	"context"
	"slices"
	"testing"

	"github.com/runnerdev/runner/internal/itemtask"
	"github.com/runnerdev/runner/internal/state"
	"github.com/runnerdev/runner/retryv2"
	"github.com/runnerdev/runner/workflow"
)

// heldDLQ is a fakeDLQ whose items in held are leased to a running retry.
type heldDLQ struct {
	*fakeDLQ
	held map[string]bool
}

func (q heldDLQ) Claim(id string) (bool, error) { return !q.held[id], nil }
func (q heldDLQ) Release(string) error          { return nil }

// dlq retry: an item a killed retry ran to success leaves the DLQ without
// running again; of the selected items, one that succeeds leaves the DLQ
// and one that fails again stays, with the failure added to its history.
func TestRetryDLQ(t *testing.T) {
	j := startJob(t, 4, 2, "")
	q := heldDLQ{newFakeDLQ(), nil}
	failAll := agentFunc(func(ctx context.Context, it *Item, attempt int, slot retryv2.Slot) itemtask.Outcome {
		if it.Index == 0 {
			return itemtask.Outcome{}
		}
		return failed("first run")
	})
	if _, err := runMap(t.Context(), j, nil, Options{DLQ: q, Dispatcher: failAll.backend()}); err != nil {
		t.Fatal(err)
	}
	// A retry killed after it logged item 3's success, before it removed
	// the item from the DLQ.
	if err := filesOf(j).AppendItemRecords(state.ItemRecord{Index: 3, ID: "3", State: state.ItemSucceeded}); err != nil {
		t.Fatal(err)
	}
	var ran []string
	again := agentFunc(func(ctx context.Context, it *Item, attempt int, slot retryv2.Slot) itemtask.Outcome {
		ran = append(ran, it.ID)
		if it.ID == "2" {
			return failed("second run")
		}
		return itemtask.Outcome{}
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

// An item is not eligible for dlq retry when its last failure is at a
// step of the agent template that says retryable: false, wherever the
// step stands (a foreach's do too); other steps, and steps the template
// no longer has, are eligible.
func TestUnretryable(t *testing.T) {
	wf, err := workflow.Parse("w.yml", []byte(`mode: mapreduce
map:
  input: items.txt
  agent_template:
    - {name: build, shell: x}
    - {name: deploy, shell: y, retryable: false}
    - foreach: {foreach: [a], do: [{id: inner, shell: z, retryable: false}]}
`))
	if err != nil {
		t.Fatal(err)
	}
	for step, want := range map[string]bool{"build": false, "deploy": true, "inner": true, "gone": false, "map step 3": false} {
		if got := Unretryable(wf, step); got != want {
			t.Errorf("Unretryable(%q) = %v, want %v", step, got, want)
		}
	}
}
