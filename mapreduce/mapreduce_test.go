package mapreduce

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/runnerdev/runner/internal/itemrun"
	"github.com/runnerdev/runner/internal/itemtask"
	"github.com/runnerdev/runner/internal/job"
	"github.com/runnerdev/runner/internal/state"
	"github.com/runnerdev/runner/internal/testkit"
	"github.com/runnerdev/runner/retryv2"
	"github.com/runnerdev/runner/workflow"
)

// fakeDLQ is a map-backed DeadLetters.
type fakeDLQ struct {
	mu    sync.Mutex
	items map[string]DeadLetter
	fail  error // returned by Add when set
}

func newFakeDLQ() *fakeDLQ { return &fakeDLQ{items: map[string]DeadLetter{}} }

func (q *fakeDLQ) Add(items ...DeadLetter) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.fail != nil {
		return q.fail
	}
	for _, it := range items {
		old := q.items[it.ItemID]
		it.Failures = append(old.Failures, it.Failures...)
		q.items[it.ItemID] = it
	}
	return nil
}

func (q *fakeDLQ) Remove(ids ...string) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, id := range ids {
		delete(q.items, id)
	}
	return nil
}

func (q *fakeDLQ) Queued(ids ...string) (map[string]bool, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	out := map[string]bool{}
	for _, id := range ids {
		_, out[id] = q.items[id]
	}
	return out, nil
}

func (q *fakeDLQ) Each(fn func(id string, index int)) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	for id, it := range q.items {
		fn(id, it.ItemIndex)
	}
	return nil
}

func (q *fakeDLQ) ids() []string {
	q.mu.Lock()
	defer q.mu.Unlock()
	var out []string
	for id := range q.items {
		out = append(out, id)
	}
	slices.Sort(out)
	return out
}

// agentFunc runs items in a function instead of the agent template; it
// keeps no checkpoints.
type agentFunc func(ctx context.Context, it *Item, attempt int, slot retryv2.Slot) itemtask.Outcome

// backend is the agentFunc as where the map phase's items run.
func (f agentFunc) backend() itemtask.Backend {
	return itemtask.Backend{Open: func(_ context.Context, _ itemtask.Job, h itemtask.Host) (itemtask.Dispatcher, error) {
		return funcDispatcher{f, h}, nil
	}}
}

type funcDispatcher struct {
	f agentFunc
	h itemtask.Host
}

func (funcDispatcher) Recorded(context.Context, string) {}
func (funcDispatcher) Close() error                     { return nil }

func (d funcDispatcher) Dispatch(ctx context.Context, t itemtask.Task) (itemtask.Outcome, error) {
	it, err := itemrun.ItemOf(t)
	if err != nil {
		return itemtask.Outcome{}, err
	}
	out := d.f(ctx, it, t.Attempt, d.h.Slot(t.DispatchID))
	if ctx.Err() != nil {
		return itemtask.Outcome{}, context.Cause(ctx)
	}
	out.DispatchID = t.DispatchID
	return out, nil
}

func failed(msg string) itemtask.Outcome {
	return itemtask.Outcome{Failed: true, Failure: itemtask.Failure{Kind: "exit", ExitCode: 1, Message: msg, At: time.Now()}}
}

// startJob starts a MapReduce job over n plain-line items "0".."n-1";
// policy is appended to the workflow.
func startJob(t *testing.T, n, parallel int, policy string) *job.Job {
	t.Helper()
	dir := t.TempDir()
	var lines []byte
	for i := range n {
		lines = fmt.Appendf(lines, "%d\n", i)
	}
	input := filepath.Join(dir, "items.txt")
	if err := os.WriteFile(input, lines, 0o600); err != nil {
		t.Fatal(err)
	}
	return startSource(t, dir, fmt.Sprintf("mode: mapreduce\nmap:\n  input: %s\n  max_parallel: %d\n  agent_template: [{shell: 'true'}]\n%s", input, parallel, policy))
}

// startSource starts job t of the workflow file src, with its state in
// dir.
func startSource(t *testing.T, dir, src string) *job.Job {
	t.Helper()
	wf, err := workflow.Parse("t.yml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	j, err := job.Start(wf, []byte(src), job.Options{Store: state.Store{Dir: filepath.Join(dir, "state")}, JobID: "t", Stdout: io.Discard, Stderr: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { j.Close() })
	return j
}

// max_parallel items run at once and never more: the first three items
// wait for each other (a handshake, not a sleep), so the bound is reached
// whatever the machine's load.
func TestMapBoundsConcurrency(t *testing.T) {
	j := startJob(t, 30, 3, "")
	var running, most atomic.Int32
	full := make(chan struct{})
	agent := agentFunc(func(ctx context.Context, it *Item, attempt int, slot retryv2.Slot) itemtask.Outcome {
		n := running.Add(1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		if n == 3 && it.Index < 3 {
			close(full)
		}
		if it.Index < 3 {
			select {
			case <-full:
			case <-time.After(testkit.Scale(10 * time.Second)):
				t.Errorf("item %d: three items never ran at once", it.Index)
			}
		}
		running.Add(-1)
		return itemtask.Outcome{}
	})
	sum, err := runMap(t.Context(), j, nil, Options{DLQ: newFakeDLQ(), Dispatcher: agent.backend()})
	if err != nil || sum.Items.Succeeded != 30 {
		t.Fatalf("runMap = %+v, %v", sum, err)
	}
	if most.Load() != 3 {
		t.Errorf("at most %d items ran at once, want 3", most.Load())
	}
}

// With on_item_failure: retry, an item waiting out its delay gives its
// slot back: with one slot the other items run meanwhile. The delay runs on
// synctest's clock, which moves only when every goroutine of the job is
// blocked, so the other items finish first however slow the machine is.
func TestItemRetryGivesTheSlotBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		j := startJob(t, 4, 1, "error_policy: {on_item_failure: retry, retry_config: {max_attempts: 2, backoff: fixed, initial_delay: 200ms}}\n")
		var mu sync.Mutex
		var order []string
		agent := agentFunc(func(ctx context.Context, it *Item, attempt int, slot retryv2.Slot) itemtask.Outcome {
			mu.Lock()
			order = append(order, fmt.Sprintf("%s/%d", it.ID, attempt))
			mu.Unlock()
			if it.Index == 0 && attempt == 1 {
				return failed("first try fails")
			}
			return itemtask.Outcome{}
		})
		sum, err := runMap(t.Context(), j, nil, Options{DLQ: newFakeDLQ(), Dispatcher: agent.backend()})
		if err != nil || sum.Items.Succeeded != 4 {
			t.Fatalf("runMap = %+v, %v", sum, err)
		}
		want := []string{"0/1", "1/1", "2/1", "3/1", "0/2"} // the items are 0..3, their default ids too
		if !slices.Equal(order, want) {
			t.Errorf("order %v, want %v", order, want)
		}
	})
}

// max_failures stops dispatch; the failed items are in the DLQ and the
// items never started stay pending.
func TestStopLeavesItemsPending(t *testing.T) {
	j := startJob(t, 10, 1, "max_failures: 2\n")
	q := newFakeDLQ()
	agent := agentFunc(func(ctx context.Context, it *Item, attempt int, slot retryv2.Slot) itemtask.Outcome {
		if it.Index == 2 || it.Index == 4 {
			return failed("no")
		}
		return itemtask.Outcome{}
	})
	sum, err := runMap(t.Context(), j, nil, Options{DLQ: q, Dispatcher: agent.backend()})
	var stopped *StoppedError
	if !errors.As(err, &stopped) || stopped.Rule != "max_failures" {
		t.Fatalf("err = %v, want a max_failures stop", err)
	}
	want := state.ItemCounts{Total: 10, Succeeded: 3, Failed: 2, DLQ: 2, Pending: 5}
	if sum.Items != want {
		t.Errorf("counts %+v, want %+v", sum.Items, want)
	}
	if got := q.ids(); !slices.Equal(got, []string{"2", "4"}) {
		t.Errorf("DLQ %v", got)
	}
}

// A failed item whose DLQ write fails is never recorded as in the DLQ: it
// stays pending, and the job stops with the error.
func TestDLQWriteFailureLosesNothing(t *testing.T) {
	j := startJob(t, 3, 1, "")
	q := newFakeDLQ()
	q.fail = errors.New("disk full")
	agent := agentFunc(func(ctx context.Context, it *Item, attempt int, slot retryv2.Slot) itemtask.Outcome {
		if it.Index == 1 {
			return failed("boom")
		}
		return itemtask.Outcome{}
	})
	_, err := runMap(t.Context(), j, nil, Options{DLQ: q, Dispatcher: agent.backend()})
	if err == nil || !errors.Is(err, q.fail) {
		t.Fatalf("err = %v, want the DLQ's error", err)
	}
	states, _ := filesOf(j).st.ReadItemStates()
	if states[1].State != state.ItemRunning {
		t.Errorf("item 1 is %q in the item log, want running (pending on resume)", states[1].State)
	}
	if _, ok := states[2]; ok {
		t.Error("item 2 started after the DLQ failed")
	}
}

// An item the item log last saw running, but which the DLQ holds, failed
// between the DLQ write and its state write: resume counts it as in the
// DLQ and does not run it again.
func TestReconcileQueuedRunningItem(t *testing.T) {
	j := startJob(t, 3, 1, "")
	q := newFakeDLQ()
	var ran []string
	first := agentFunc(func(ctx context.Context, it *Item, attempt int, slot retryv2.Slot) itemtask.Outcome {
		return itemtask.Outcome{}
	})
	if _, err := runMap(t.Context(), j, nil, Options{DLQ: q, Dispatcher: first.backend()}); err != nil {
		t.Fatal(err)
	}
	// Rewrite history: item 1 was running when the DLQ took it.
	log, _ := filesOf(j).open()
	log.Append(state.ItemRecord{Index: 1, ID: "1", State: state.ItemRunning})
	log.Close()
	q.Add(DeadLetter{ItemID: "1", ItemIndex: 1, Failures: []itemtask.Failure{{Message: "boom"}}})
	again := agentFunc(func(ctx context.Context, it *Item, attempt int, slot retryv2.Slot) itemtask.Outcome {
		ran = append(ran, it.ID)
		return itemtask.Outcome{}
	})
	sum, err := runMap(t.Context(), j, nil, Options{DLQ: q, Dispatcher: again.backend()})
	if err != nil || len(ran) != 0 {
		t.Fatalf("resume ran %v (%v), want nothing", ran, err)
	}
	if sum.Items.DLQ != 1 || sum.Items.Succeeded != 2 || sum.Items.Pending != 0 {
		t.Errorf("counts %+v", sum.Items)
	}
	states, _ := filesOf(j).st.ReadItemStates()
	if states[1].State != state.ItemDLQ {
		t.Errorf("item 1 is %q, want dlq recorded by reconcile", states[1].State)
	}
	// Its result, which goes between the two writes, is written too: the
	// last one of item 1 says failed.
	data, err := os.ReadFile(j.Layout().Results)
	if err != nil {
		t.Fatal(err)
	}
	var last Result
	for line := range strings.SplitSeq(strings.TrimSpace(string(data)), "\n") {
		var r Result
		if err := json.Unmarshal([]byte(line), &r); err == nil && r.ItemIndex == 1 {
			last = r
		}
	}
	if !last.Status.Failed || last.ItemID != "1" {
		t.Errorf("item 1's last result %+v, want one that says failed", last)
	}
}

// An item logged as succeeded that the DLQ still holds (a process died
// between recording an item found merged and taking it out of the DLQ,
// issue 23.1): resume takes it out, and counts it as succeeded.
func TestReconcileSucceededQueuedItem(t *testing.T) {
	j := startJob(t, 2, 1, "")
	q := newFakeDLQ()
	ok := agentFunc(func(ctx context.Context, it *Item, attempt int, slot retryv2.Slot) itemtask.Outcome {
		return itemtask.Outcome{}
	})
	if _, err := runMap(t.Context(), j, nil, Options{DLQ: q, Dispatcher: ok.backend()}); err != nil {
		t.Fatal(err)
	}
	q.Add(DeadLetter{ItemID: "1", ItemIndex: 1, Failures: []itemtask.Failure{{Message: "boom"}}})
	sum, err := runMap(t.Context(), j, nil, Options{DLQ: q, Dispatcher: ok.backend()})
	if err != nil || sum.Items.Succeeded != 2 || sum.Items.DLQ != 0 {
		t.Fatalf("resume: %+v, %v; want 2 succeeded", sum.Items, err)
	}
	if queued, _ := q.Queued("1"); queued["1"] {
		t.Error("item 1 is still in the DLQ")
	}
}

// The local agent goes on from an attempt's checkpoints: a finished step
// is skipped and its capture and output restored, a step that waited to
// retry runs its next attempt, and each step that finishes is saved; when
// a save fails the item stops there.
func TestAgentContinuesFromCheckpoints(t *testing.T) {
	j := startJob(t, 1, 1, "")
	dir := t.TempDir()
	src := fmt.Sprintf(`mode: mapreduce
map:
  input: x
  agent_template:
    - shell: echo one >> %[1]s/ran; echo hello
      capture_output: greeting
    - shell: echo "two ${greeting} $RUNNER_ATTEMPT" >> %[1]s/ran
      retry_config: {attempts: 3, initial_delay: 1h}
    - shell: echo three >> %[1]s/ran
`, dir)
	wf, err := workflow.Parse("t.yml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	r := itemrun.NewRunner(j.Executor(), j.Scope(), wf.Map, j.Layout(), nil, nil)
	saved := []state.StepRecord{
		{Index: 0, Status: "succeeded", Vars: map[string]any{"greeting": "hello"}, Output: "hello\n"},
		{Index: 1, Status: "retrying", Attempts: 1, Failures: []int{1}, Due: time.Now()},
	}
	task := itemtask.Task{ItemID: "item_0", Item: []byte(`"x"`), Attempt: 1, DispatchID: "d", Checkpoints: saved}
	for _, tc := range []struct {
		name    string
		failing int // the save that fails, from 1; 0 = none
		ran     string
	}{
		{"saves", 0, "two hello 2\nthree\n"},
		{"save fails", 1, "two hello 2\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			os.Remove(filepath.Join(dir, "ran"))
			var got []string
			out, err := r.Run(t.Context(), task, nil, func(rec state.StepRecord) error {
				got = append(got, fmt.Sprintf("%d %s", rec.Index, rec.Status))
				if len(got) == tc.failing {
					return errors.New("disk full")
				}
				return nil
			})
			ran, _ := os.ReadFile(filepath.Join(dir, "ran"))
			if string(ran) != tc.ran {
				t.Errorf("ran %q, want %q", ran, tc.ran)
			}
			switch {
			case tc.failing == 0 && (err != nil || out.Failed || out.Output != "hello\n" || !slices.Equal(got, []string{"1 succeeded", "2 succeeded"})):
				t.Errorf("outcome %+v, saved %v", out, got)
			case tc.failing > 0 && err == nil:
				t.Errorf("outcome %+v after a failed save", out)
			}
		})
	}
}

// A backend that cannot run items in worktrees is refused before the
// job's setup runs, when the workflow's items need them.
func TestRunRefusesWhatTheBackendCannotDo(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	j := startSource(t, dir, "mode: mapreduce\nsetup:\n  - shell: touch setup-ran\nmap:\n  input: seq 1 2\n  isolation: worktree\n  agent_template: [{shell: 'true'}]\n")
	none := agentFunc(nil).backend()
	none.Name = "nowhere"
	_, err := Run(t.Context(), j, Options{DLQ: newFakeDLQ(), Dispatcher: none})
	if err == nil || !strings.Contains(err.Error(), "cannot run on nowhere yet") {
		t.Fatalf("Run = %v, want the worktree refusal", err)
	}
	if _, err := os.Stat("setup-ran"); err == nil {
		t.Error("setup ran before the refusal")
	}
	none.Can.Worktrees = true
	if err := Supports(j.Workflow(), none); err != nil {
		t.Errorf("Supports with worktrees = %v", err)
	}
}

// The items a dead process left running in worktrees start again from
// their first step: their worktrees, and their steps' work, are gone.
func TestRestartItems(t *testing.T) {
	running := map[int]state.ItemRecord{
		0: {Index: 0, ID: "a", State: state.ItemRunning},
		1: {Index: 1, ID: "b", State: state.ItemRunning, Steps: []state.StepRecord{{Index: 0}}},
	}
	restartItems(running)
	if running[1].Steps != nil || running[1].ID != "b" || running[1].State != state.ItemRunning {
		t.Errorf("b after restartItems = %+v; want it running from its first step", running[1])
	}
}
