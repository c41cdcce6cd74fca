package mapreduce

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/runnerdev/runner/internal/eventlog"
	"github.com/runnerdev/runner/internal/itemtask"
	"github.com/runnerdev/runner/internal/job"
	"github.com/runnerdev/runner/internal/state"
	"github.com/runnerdev/runner/internal/testkit"
	"github.com/runnerdev/runner/retryv2"
)

// spending is an agent whose items' agents spend cost[item] USD (0.30 when
// not named), recorded as the job records an agent's agent_usage event,
// and fail when fail says so.
func spending(j *job.Job, cost map[string]float64, fail func(it *Item, attempt int) bool) (agentFunc, func() map[string]int) {
	var mu sync.Mutex
	runs := map[string]int{}
	agent := agentFunc(func(ctx context.Context, it *Item, attempt int, slot retryv2.Slot) itemtask.Outcome {
		mu.Lock()
		runs[it.ID]++
		mu.Unlock()
		u := eventlog.AgentUsage{CostUSD: 0.30, OutputTokens: 1000}
		if c, ok := cost[it.ID]; ok {
			u.CostUSD = c
		}
		j.Emit(eventlog.AgentUsageOf("review", attempt, u).WithItem(it.ID))
		out := itemtask.Outcome{Usage: &u}
		if fail != nil && fail(it, attempt) {
			out.Failed, out.Failure = true, failed("no").Failure
		}
		return out
	})
	return agent, func() map[string]int { mu.Lock(); defer mu.Unlock(); return runs }
}

// Once the job's agents spent its budget no item starts, not even an
// item-level retry: with one slot, items 0..3 spend $1.20 of a $1
// budget, and the job stops with the rest pending (item 3's retry too).
func TestBudgetStopsDispatch(t *testing.T) {
	j := startJob(t, 10, 1, "budget: {max_cost_usd: 1}\nerror_policy: {on_item_failure: retry, retry_config: {max_attempts: 2, backoff: fixed, initial_delay: 10ms}}\n")
	agent, runs := spending(j, nil, func(it *Item, attempt int) bool { return it.Index == 3 })
	sum, err := runMap(t.Context(), j, nil, Options{DLQ: newFakeDLQ(), Dispatcher: agent.backend()})
	var stopped *StoppedError
	if !errors.As(err, &stopped) || !stopped.Budget() || stopped.Left != 7 {
		t.Fatalf("err = %v, want a budget stop with 7 items left", err)
	}
	want := state.ItemCounts{Total: 10, Succeeded: 3, Pending: 7}
	if sum.Items != want {
		t.Errorf("counts %+v, want %+v", sum.Items, want)
	}
	if r := runs(); len(r) != 4 || r["3"] != 1 {
		t.Errorf("runs %v, want items 0..3 once each", r)
	}
	if got := j.Meta().Spend; got == nil || got.CostUSD < 1.2-1e-9 {
		t.Errorf("job spend %+v, want $1.20", got)
	}
}

// The budget given on the command line (job.json's budget_usd) replaces
// the file's max_cost_usd.
func TestBudgetFromTheCommandLine(t *testing.T) {
	j := startJob(t, 10, 1, "budget: {max_cost_usd: 100}\n")
	if err := j.UpdateMeta(func(m *state.Meta) { m.BudgetUSD = 0.5 }); err != nil {
		t.Fatal(err)
	}
	agent, runs := spending(j, nil, nil)
	_, err := runMap(t.Context(), j, nil, Options{DLQ: newFakeDLQ(), Dispatcher: agent.backend()})
	if !errors.As(err, new(*StoppedError)) || len(runs()) != 2 {
		t.Errorf("err = %v, runs %v; want a stop after 2 items", err, runs())
	}
}

// An item whose agents spend over its limit fails as kind budget and goes
// to the DLQ without the item-level retry; the others run as usual.
func TestItemOverItsLimit(t *testing.T) {
	j := startJob(t, 4, 2, "budget: {item_max_cost_usd: 0.5}\nerror_policy: {on_item_failure: retry, retry_config: {max_attempts: 3, backoff: fixed, initial_delay: 10ms}}\n")
	q := newFakeDLQ()
	agent, runs := spending(j, map[string]float64{"2": 0.9}, nil)
	sum, err := runMap(t.Context(), j, nil, Options{DLQ: q, Dispatcher: agent.backend()})
	if err != nil || sum.Items != (state.ItemCounts{Total: 4, Succeeded: 3, Failed: 1, DLQ: 1}) {
		t.Fatalf("runMap = %+v, %v", sum.Items, err)
	}
	if r := runs(); r["2"] != 1 {
		t.Errorf("item 2 ran %d times, want once (never retried)", r["2"])
	}
	f := q.items["2"].Failures
	if len(f) != 1 || f[0].Kind != KindBudget || f[0].Message != "its agents spent $0.90, 1k tokens, over budget.item_max_cost_usd $0.50" {
		t.Errorf("item 2's failures %+v", f)
	}
}

// An item's limit counts all its attempts, those of an earlier run
// included: item 1, resumed after its first attempt spent $0.40 and
// failed, spends $0.30 more and is over its $0.50.
func TestItemLimitCountsEarlierRuns(t *testing.T) {
	j := startJob(t, 2, 1, "budget: {item_max_cost_usd: 0.5}\nerror_policy: {on_item_failure: retry, retry_config: {max_attempts: 3, backoff: fixed, initial_delay: 10ms}}\n")
	log, err := filesOf(j).open()
	if err != nil {
		t.Fatal(err)
	}
	log.Append(state.ItemRecord{Index: 1, ID: "1", State: state.ItemRunning, Attempt: 2, Failures: []byte(`[{"attempt":1,"kind":"exit","message":"no"}]`),
		Spent: &eventlog.AgentUsage{CostUSD: 0.40, OutputTokens: 1000}})
	log.Close()
	q := newFakeDLQ()
	agent, runs := spending(j, nil, nil)
	sum, err := runMap(t.Context(), j, nil, Options{DLQ: q, Dispatcher: agent.backend()})
	if err != nil || sum.Items != (state.ItemCounts{Total: 2, Succeeded: 1, Failed: 1, DLQ: 1}) {
		t.Fatalf("runMap = %+v, %v", sum.Items, err)
	}
	if r := runs(); r["1"] != 1 {
		t.Errorf("item 1 ran %d times, want once", r["1"])
	}
	f := q.items["1"].Failures
	if len(f) != 2 || f[1].Kind != KindBudget || f[1].Message != "its agents spent $0.70, 2k tokens, over budget.item_max_cost_usd $0.50" {
		t.Errorf("item 1's failures %+v", f)
	}
}

// The record of an item-level retry decision keeps what the item's
// attempts spent, for a resume to count on.
func TestRetryRecordKeepsTheSpend(t *testing.T) {
	j := startJob(t, 2, 1, "error_policy: {on_item_failure: retry, retry_config: {max_attempts: 2, backoff: fixed, initial_delay: 10ms}}\n")
	agent, _ := spending(j, nil, func(it *Item, attempt int) bool { return it.Index == 1 && attempt == 1 })
	if _, err := runMap(t.Context(), j, nil, Options{DLQ: newFakeDLQ(), Dispatcher: agent.backend()}); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(j.Layout().ItemStates)
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(string(data)) {
		var rec state.ItemRecord
		if json.Unmarshal([]byte(line), &rec) == nil && rec.ID == "1" && rec.State == state.ItemRunning && len(rec.Failures) > 0 {
			if rec.Spent == nil || rec.Spent.CostUSD != 0.30 {
				t.Errorf("item 1's retry record: spent %+v, want $0.30", rec.Spent)
			}
			return
		}
	}
	t.Errorf("no retry record of item 1 in the item log:\n%s", data)
}

// A dlq retry counts toward the job's budget: a job whose agents spent
// it starts no item of the retry, which ends stopped by the budget with
// the items left in the DLQ.
func TestBudgetStopsDLQRetry(t *testing.T) {
	j := startJob(t, 4, 2, "budget: {max_cost_usd: 1}\n")
	q := heldDLQ{newFakeDLQ(), nil}
	agent, runs := spending(j, nil, func(it *Item, _ int) bool { return it.Index < 2 })
	if _, err := runMap(t.Context(), j, nil, Options{DLQ: q, Dispatcher: agent.backend()}); err != nil {
		t.Fatal(err) // $1.20 spent: the four items had started
	}
	res, err := RetryDLQ(t.Context(), j, q, RetryOptions{Dispatcher: agent.backend(), Select: func() ([]*Item, error) {
		return []*Item{{Index: 0, ID: "0", Raw: []byte(`"0"`), Value: "0"}, {Index: 1, ID: "1", Raw: []byte(`"1"`), Value: "1"}}, nil
	}})
	var stopped *StoppedError
	if !errors.As(err, &stopped) || !stopped.Budget() || stopped.Left != 2 || res.Remaining != 2 {
		t.Errorf("RetryDLQ = %+v, %v; want a budget stop with both items left", res, err)
	}
	if r := runs(); r["0"] != 1 || r["1"] != 1 {
		t.Errorf("runs %v: the retry ran items", r)
	}
}

// With Hard (--hard) the budget's stop ends the items running too, as an
// interrupt does: item 1, which would run until its context ends, stops
// when item 0's spend reaches the budget, and stays pending.
func TestHardBudgetStopsRunningItems(t *testing.T) {
	j := startJob(t, 10, 2, "budget: {max_cost_usd: 1}\n")
	started := make(chan struct{})
	agent := agentFunc(func(ctx context.Context, it *Item, attempt int, slot retryv2.Slot) itemtask.Outcome {
		if it.Index == 1 {
			close(started)
			select {
			case <-ctx.Done():
			case <-time.After(testkit.Scale(10 * time.Second)):
				t.Error("item 1 was not stopped")
			}
			return itemtask.Outcome{}
		}
		<-started
		u := eventlog.AgentUsage{CostUSD: 1}
		j.Emit(eventlog.AgentUsageOf("review", attempt, u).WithItem(it.ID))
		return itemtask.Outcome{Usage: &u}
	})
	sum, err := runMap(t.Context(), j, nil, Options{DLQ: newFakeDLQ(), Dispatcher: agent.backend(), Hard: true})
	if !errors.As(err, new(*StoppedError)) || sum.Items != (state.ItemCounts{Total: 10, Succeeded: 1, Pending: 9}) {
		t.Errorf("runMap = %+v, %v; want a budget stop with item 1 pending", sum.Items, err)
	}
}
