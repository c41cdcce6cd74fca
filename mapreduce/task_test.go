package mapreduce

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/runnerdev/runner/internal/eventlog"
	"github.com/runnerdev/runner/internal/itemtask"
	"github.com/runnerdev/runner/internal/job"
	"github.com/runnerdev/runner/internal/state"
)

// scriptedDispatcher answers each dispatch with the next of its replies
// for the item; it records the tasks it was sent.
type scriptedDispatcher struct {
	host    itemtask.Host
	replies map[string][]func(t itemtask.Task) (itemtask.Outcome, error)
	mu      sync.Mutex
	tasks   []itemtask.Task
}

func (d *scriptedDispatcher) Dispatch(ctx context.Context, t itemtask.Task) (itemtask.Outcome, error) {
	d.mu.Lock()
	d.tasks = append(d.tasks, t)
	var reply func(itemtask.Task) (itemtask.Outcome, error)
	if r := d.replies[t.ItemID]; len(r) > 0 {
		reply, d.replies[t.ItemID] = r[0], r[1:]
	}
	d.mu.Unlock()
	if reply == nil {
		return itemtask.Outcome{DispatchID: t.DispatchID}, nil
	}
	return reply(t)
}

func (d *scriptedDispatcher) Recorded(context.Context, string) {}
func (d *scriptedDispatcher) Close() error                     { return nil }

func (d *scriptedDispatcher) sentFor(itemID string) []itemtask.Task {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []itemtask.Task
	for _, t := range d.tasks {
		if t.ItemID == itemID {
			out = append(out, t)
		}
	}
	return out
}

func (d *scriptedDispatcher) run(t *testing.T, j *job.Job, q *fakeDLQ) (Summary, error) {
	return runMap(t.Context(), j, nil, Options{DLQ: q, Dispatcher: itemtask.Backend{Open: func(_ context.Context, _ itemtask.Job, h itemtask.Host) (itemtask.Dispatcher, error) {
		d.host = h
		return d, nil
	}}})
}

var errRunnerLost = errors.New("agent process killed")

// A task is plain data: it goes through JSON unchanged.
func TestTaskIsSerializable(t *testing.T) {
	in := itemtask.Task{JobID: "j", Index: 3, ItemID: "c", Item: json.RawMessage(`{"a":[1,"\udc80"]}`), Attempt: 2, DispatchID: "3.2.x.9", Seed: 42,
		Checkpoints: []state.StepRecord{{Index: 0, Key: "a", Status: "succeeded", Vars: map[string]any{"v": "x"}, Output: "hi\n"}}}
	data, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	var out itemtask.Task
	if err := json.Unmarshal(data, &out); err != nil {
		t.Fatal(err)
	}
	again, _ := json.Marshal(out)
	if string(again) != string(data) {
		t.Errorf("round trip:\n%s\n%s", data, again)
	}
}

// A runner lost in the middle of an attempt (Dispatch returns an error)
// leaves the item pending: the attempt goes out again under a new dispatch
// id, after the steps the lost run had saved, and its end is recorded
// once.
func TestLostRunnerSendsTheAttemptAgain(t *testing.T) {
	j := startJob(t, 3, 2, "")
	q := newFakeDLQ()
	d := &scriptedDispatcher{}
	lose := func(t itemtask.Task) (itemtask.Outcome, error) {
		if err := d.host.Checkpoint(t.DispatchID, state.StepRecord{Index: 0, Status: "succeeded"}); err != nil {
			return itemtask.Outcome{}, err
		}
		return itemtask.Outcome{}, errRunnerLost
	}
	d.replies = map[string][]func(itemtask.Task) (itemtask.Outcome, error){"1": {lose}}
	sum, err := d.run(t, j, q)
	if err != nil || sum.Items.Succeeded != 3 {
		t.Fatalf("runMap = %+v, %v", sum, err)
	}
	sent := d.sentFor("1")
	if len(sent) != 2 || sent[0].DispatchID == sent[1].DispatchID || sent[1].Attempt != 1 {
		t.Fatalf("item 1 was sent %+v, want attempt 1 twice under two dispatch ids", sent)
	}
	if len(sent[1].Checkpoints) != 1 || sent[1].Checkpoints[0].Index != 0 {
		t.Errorf("second dispatch checkpoints %+v, want the step the lost run saved", sent[1].Checkpoints)
	}
	states, _ := filesOf(j).st.ReadItemStates()
	if states[1].State != state.ItemSucceeded {
		t.Errorf("item 1 is %q", states[1].State)
	}
}

// An item whose runners keep getting lost fails as kind "lost" after
// maxLost tries, through the error policy: one DLQ record, not one per
// lost runner.
func TestRunnerLostEveryTimeFailsTheItem(t *testing.T) {
	j := startJob(t, 2, 1, "")
	q := newFakeDLQ()
	lose := func(itemtask.Task) (itemtask.Outcome, error) { return itemtask.Outcome{}, errRunnerLost }
	d := &scriptedDispatcher{replies: map[string][]func(itemtask.Task) (itemtask.Outcome, error){"0": {lose, lose, lose, lose}}}
	sum, err := d.run(t, j, q)
	if err != nil || sum.Items.DLQ != 1 || sum.Items.Succeeded != 1 {
		t.Fatalf("runMap = %+v, %v", sum, err)
	}
	if n := len(d.sentFor("0")); n != maxLost {
		t.Errorf("item 0 was sent %d times, want %d", n, maxLost)
	}
	f := q.items["0"].Failures
	if len(f) != 1 || f[0].Kind != itemtask.KindLost || !strings.Contains(f[0].Message, "agent process killed") {
		t.Errorf("DLQ failures %+v, want one of kind lost naming the cause", f)
	}
}

// What comes from a dispatch that is over changes nothing: a checkpoint
// or event sent after its outcome is refused, and an outcome that names
// another dispatch is not recorded (the attempt goes out again).
func TestStaleDispatchChangesNothing(t *testing.T) {
	j := startJob(t, 2, 1, "")
	q := newFakeDLQ()
	var first itemtask.Task
	failFirst := func(t itemtask.Task) (itemtask.Outcome, error) {
		first = t
		return itemtask.Outcome{DispatchID: t.DispatchID, Failed: true, Failure: itemtask.Failure{Attempt: 1, Kind: "exit", ExitCode: 1, Message: "boom"}}, nil
	}
	repeatOld := func(t itemtask.Task) (itemtask.Outcome, error) {
		// A late, repeated result of the first dispatch.
		return itemtask.Outcome{DispatchID: first.DispatchID, Failed: true, Failure: itemtask.Failure{Attempt: 1, Kind: "exit", ExitCode: 1, Message: "boom"}}, nil
	}
	d := &scriptedDispatcher{replies: map[string][]func(itemtask.Task) (itemtask.Outcome, error){"0": {failFirst}, "1": {repeatOld}}}
	sum, err := d.run(t, j, q)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Items.DLQ != 1 || sum.Items.Succeeded != 1 {
		t.Errorf("counts %+v, want item 0 in the DLQ and item 1 succeeded", sum.Items)
	}
	if f := q.items["0"].Failures; len(f) != 1 {
		t.Errorf("item 0 has %d DLQ failures, want 1", len(f))
	}
	if _, in := q.items["1"]; in {
		t.Error("the stale outcome put item 1 in the DLQ")
	}
	if err := d.host.Checkpoint(first.DispatchID, state.StepRecord{Index: 0}); !errors.Is(err, itemtask.ErrStale) {
		t.Errorf("checkpoint of an ended dispatch: %v, want itemtask.ErrStale", err)
	}
	if err := d.host.Emit(first.DispatchID, eventlog.StepStarted("a", 1, "true")); !errors.Is(err, itemtask.ErrStale) {
		t.Errorf("event of an ended dispatch: %v, want itemtask.ErrStale", err)
	}
}

// An event of a dispatch names the dispatch's item when it names an item
// at all, whatever item the runner said; one that names none (a step's
// circuit breaker) stays so, as in this process.
func TestHostEmitNamesTheDispatchItem(t *testing.T) {
	j := startJob(t, 1, 1, "")
	d := &scriptedDispatcher{}
	emit := func(t itemtask.Task) (itemtask.Outcome, error) {
		for _, e := range []eventlog.Event{eventlog.StepStarted("a", 1, "true").WithItem("elsewhere"), eventlog.CircuitChanged("open", "step", "a")} {
			if err := d.host.Emit(t.DispatchID, e); err != nil {
				return itemtask.Outcome{}, err
			}
		}
		return itemtask.Outcome{DispatchID: t.DispatchID}, nil
	}
	d.replies = map[string][]func(itemtask.Task) (itemtask.Outcome, error){"0": {emit}}
	if _, err := d.run(t, j, newFakeDLQ()); err != nil {
		t.Fatal(err)
	}
	events, err := eventlog.Read(j.Layout().Events, eventlog.Query{Types: []eventlog.Type{eventlog.TypeStepStarted, eventlog.TypeCircuitOpened}})
	if err != nil || len(events) != 2 {
		t.Fatalf("events %+v, %v", events, err)
	}
	if events[0].ItemID != "0" {
		t.Errorf("step event names item %q, want 0", events[0].ItemID)
	}
	if events[1].ItemID != "" {
		t.Errorf("the breaker event names item %q, want none", events[1].ItemID)
	}
}

// The checkpoint of the template's last step is written only when its
// task ends without an outcome (the runner was lost: the next dispatch,
// or a resume after a crash, goes on after it); an outcome makes it
// needless, as the item's end record follows at once.
func TestLastStepCheckpointOnlyWithoutAnOutcome(t *testing.T) {
	j := startJob(t, 2, 1, "")
	d := &scriptedDispatcher{}
	checkpointThen := func(err error) func(itemtask.Task) (itemtask.Outcome, error) {
		return func(t itemtask.Task) (itemtask.Outcome, error) {
			if cerr := d.host.Checkpoint(t.DispatchID, state.StepRecord{Index: 0, Status: "succeeded"}); cerr != nil {
				return itemtask.Outcome{}, cerr
			}
			return itemtask.Outcome{DispatchID: t.DispatchID}, err
		}
	}
	d.replies = map[string][]func(itemtask.Task) (itemtask.Outcome, error){"0": {checkpointThen(nil)}, "1": {checkpointThen(errRunnerLost), checkpointThen(nil)}}
	if sum, err := d.run(t, j, newFakeDLQ()); err != nil || sum.Items.Succeeded != 2 {
		t.Fatalf("runMap = %+v, %v", sum, err)
	}
	data, err := os.ReadFile(j.Layout().ItemStates)
	if err != nil {
		t.Fatal(err)
	}
	steps := map[string]int{}
	for line := range strings.Lines(string(data)) {
		var rec state.ItemRecord
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatal(err)
		}
		if rec.Step != nil {
			steps[rec.ID]++
		}
	}
	if steps["0"] != 0 || steps["1"] != 1 {
		t.Errorf("checkpoints written per item %v, want none for 0 (its outcome came) and one for 1 (its first runner was lost)", steps)
	}
}
