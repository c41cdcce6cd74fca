package eventlog

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// constructed pairs each constructor with the type and fields its event
// had when the writers built the map themselves: the same keys, values and
// Go value types, so that both the log and the in-process listeners see
// what they saw before.
var constructed = []struct {
	got    Event
	typ    string
	fields map[string]any
}{
	{JobStarted(18446744073709551615, "deploy", "deploy.yml", "standard", 42), "job_started",
		map[string]any{"seed": uint64(18446744073709551615), "workflow": "deploy", "file": "deploy.yml", "mode": "standard", "pid": 42}},
	{JobResumed(42, 2), "job_resumed", map[string]any{"pid": 42, "resumed": 2}},
	{JobChanged("ci.yml", "workflow.1.yml", []string{"REGION"}), "job_changed",
		map[string]any{"file": "ci.yml", "kept": "workflow.1.yml", "set": []string{"REGION"}}},
	{JobFinished("completed", 0, 1500*time.Millisecond, nil, map[string]any{"succeeded": 2, "failed": 0, "skipped": 1}), "job_completed",
		map[string]any{"succeeded": 2, "failed": 0, "skipped": 1, "status": "completed", "exit_code": 0, "duration_ms": int64(1500)}},
	{JobFinished("failed", 1, time.Second, errors.New("step build failed"), nil), "job_failed",
		map[string]any{"status": "failed", "exit_code": 1, "duration_ms": int64(1000), "error": "step build failed"}},
	{JobFinished("stopped", 2, 0, nil, nil), "job_stopped", map[string]any{"status": "stopped", "exit_code": 2, "duration_ms": int64(0)}},
	{JobFinished("interrupted", 130, 0, nil, nil), "job_interrupted", map[string]any{"status": "interrupted", "exit_code": 130, "duration_ms": int64(0)}},
	{StepStarted("build", 3, "make\nmake test"), "step_started", map[string]any{"step": "build", "index": 3, "command": "make\nmake test"}},
	{StepCompleted("build", 0, 2*time.Second), "step_completed", map[string]any{"step": "build", "exit_code": 0, "duration_ms": int64(2000)}},
	{StepCompletedByFallback("build"), "step_completed", map[string]any{"step": "build", "fallback": true, "exit_code": 0}},
	{StepFailed("build", "when: bad"), "step_failed", map[string]any{"step": "build", "error": "when: bad"}},
	{StepCommandFailed("build", "exit status 2", 2, ""), "step_failed", map[string]any{"step": "build", "error": "exit status 2", "exit_code": 2}},
	{StepCommandFailed("build", "exit status 2", 2, "continue"), "step_failed",
		map[string]any{"step": "build", "error": "exit status 2", "exit_code": 2, "handled": "continue"}},
	{StepSkipped("build", "when: false"), "step_skipped", map[string]any{"step": "build", "reason": "when: false"}},
	{StepRepeat("poll", 3, 250*time.Millisecond), "step_repeat", map[string]any{"step": "poll", "run": 3, "delay_ms": int64(250)}},
	{AttemptStarted("build", 2), "attempt_started", map[string]any{"step": "build", "attempt": 2}},
	{AttemptSucceeded("build", 2, 40*time.Millisecond), "attempt_succeeded", map[string]any{"step": "build", "attempt": 2, "duration_ms": int64(40)}},
	{AttemptFailed(Failure{Step: "build", Attempt: 1, Kind: "exit", ExitCode: 22, Message: "exit status 22", Duration: 5 * time.Millisecond}), "attempt_failed",
		map[string]any{"step": "build", "attempt": 1, "kind": "exit", "exit_code": 22, "duration_ms": int64(5), "message": "exit status 22"}},
	{RetryDecision("build", Decision{Attempt: 1, Policy: 0, Matcher: "rate_limit", Action: "retry", Delay: 2100 * time.Millisecond,
		Reason: "matched rate_limit", Limit: 5, Count: 1, Kind: "exit", ExitCode: 22}), "retry_decision",
		map[string]any{"step": "build", "attempt": 1, "policy": 0, "matcher": "rate_limit", "action": "retry", "delay_ms": int64(2100),
			"reason": "matched rate_limit", "limit": 5, "count": 1, "kind": "exit", "exit_code": 22}},
	{FallbackFailed("build", "exit status 1"), "fallback_failed", map[string]any{"step": "build", "error": "exit status 1"}},
	{HandlerCompleted("build", 2, 0), "handler_completed", map[string]any{"step": "build", "handler": 2, "exit_code": 0}},
	{AgentUsageOf("fix", 2, AgentUsage{InputTokens: 31, OutputTokens: 1411, CacheReadTokens: 9, CacheWriteTokens: 8, CostUSD: 0.19, Turns: 7, APITime: 45 * time.Second, SessionID: "s", Model: "m"}),
		"agent_usage", map[string]any{"step": "fix", "attempt": 2, "input_tokens": int64(31), "output_tokens": int64(1411), "cache_read_tokens": int64(9),
			"cache_write_tokens": int64(8), "cost_usd": 0.19, "turns": 7, "api_ms": int64(45000), "session_id": "s", "model": "m"}},
	{AgentProgress("fix", 1, AgentUsage{InputTokens: 4, OutputTokens: 87, CacheReadTokens: 13000, CacheWriteTokens: 1520, CostUSD: 0.0109, SessionID: "s", Model: "m"}),
		"agent_progress", map[string]any{"step": "fix", "attempt": 1, "input_tokens": int64(4), "output_tokens": int64(87), "cache_read_tokens": int64(13000),
			"cache_write_tokens": int64(1520), "cost_usd": 0.0109, "turns": 0, "api_ms": int64(0), "session_id": "s", "model": "m"}},
	{HandlerFailed("build", 2, 0, "made no commit (commit_required)"), "handler_completed", map[string]any{"step": "build", "handler": 2, "exit_code": 0, "error": "made no commit (commit_required)"}},
	{CircuitChanged("open", "step", "build"), "circuit_opened", map[string]any{"step": "build", "scope": "step"}},
	{CircuitChanged("half_open", "step", "build"), "circuit_half_open", map[string]any{"step": "build", "scope": "step"}},
	{CircuitChanged("closed", "workflow", ""), "circuit_closed", map[string]any{"scope": "workflow"}},
	{ResultDuplicate("a", 2, 3, "w1", 5), "result_duplicate", map[string]any{"item_id": "a", "attempt": 2, "epoch": 3, "worker": "w1", "delivery": 5}},
	{TaskRedelivered("a", 1, 2, "w2", "w1"), "task_redelivered", map[string]any{"item_id": "a", "attempt": 1, "delivery": 2, "worker": "w2", "from_worker": "w1"}},
	{NATSStreams(3, "R3"), "nats_streams", map[string]any{"replicas": 3, "replication": "R3"}},
	{NATSUnavailable("RUNNER_TASKS", "context deadline exceeded"), "nats_unavailable", map[string]any{"stream": "RUNNER_TASKS", "message": "context deadline exceeded"}},
	{NATSRestored("RUNNER_TASKS", 2500*time.Millisecond), "nats_restored", map[string]any{"stream": "RUNNER_TASKS", "down_ms": int64(2500)}},
	{ThresholdReached("max_failures", "3 items failed"), "threshold_reached", map[string]any{"rule": "max_failures", "reason": "3 items failed"}},
	{BudgetReached("max_cost_usd", 5, AgentUsage{CostUSD: 5.25, InputTokens: 10, OutputTokens: 2}, 3), "budget_reached", map[string]any{"limit": "max_cost_usd", "max": 5.0, "cost_usd": 5.25, "tokens": int64(12), "running": 3}},
	{ItemsLoaded(3, "file items.txt", 10*time.Millisecond), "items_loaded", map[string]any{"total": 3, "source": "file items.txt", "duration_ms": int64(10)}},
	{MapStarted(3, 2, 16, "none"), "map_started", map[string]any{"total": 3, "pending": 2, "max_parallel": 16, "isolation": "none"}},
	{MapCompleted(ItemCounts{Total: 6, Succeeded: 1, Failed: 1, Skipped: 1, DLQ: 2, Pending: 1}), "map_completed",
		map[string]any{"total": 6, "succeeded": 1, "failed": 1, "skipped": 1, "dlq": 2, "pending": 1}},
	{ReduceSkipped(2, "the map had no items"), "reduce_skipped", map[string]any{"steps": 2, "reason": "the map had no items"}},
	{ItemStarted("a", 0, 1, false), "item_started", map[string]any{"item_id": "a", "item_index": 0, "attempt": 1}},
	{ItemStarted("a", 0, 2, true), "item_started", map[string]any{"item_id": "a", "item_index": 0, "attempt": 2, "resumed": true}},
	{ItemSucceeded("a", 1, 35*time.Millisecond), "item_succeeded", map[string]any{"item_id": "a", "attempt": 1, "duration_ms": int64(35)}},
	{ItemRetrying("a", Failure{Step: "process", Attempt: 1, Kind: "timeout", ExitCode: -1, Message: "timed out", Duration: time.Second}, 500*time.Millisecond),
		"item_retrying", map[string]any{"item_id": "a", "attempt": 1, "kind": "timeout", "exit_code": -1, "step": "process",
			"message": "timed out", "duration_ms": int64(1000), "delay_ms": int64(500)}},
	{ItemFailed("a", Failure{Step: "process", Attempt: 3, Kind: "exit", ExitCode: 1, Message: "boom"}, "dlq", map[string]any{"n": int64(1)}),
		"item_failed", map[string]any{"item_id": "a", "attempt": 3, "kind": "exit", "exit_code": 1, "step": "process", "message": "boom",
			"duration_ms": int64(0), "action": "dlq", "item": map[string]any{"n": int64(1)}}},
	{ItemSkipped("a", "on_item_failure: skip"), "item_skipped", map[string]any{"item_id": "a", "reason": "on_item_failure: skip"}},
	{DLQAdded("a", 3), "dlq_added", map[string]any{"item_id": "a", "failures": 3}},
	{DLQRemoved("a", ""), "dlq_removed", map[string]any{"item_id": "a"}},
	{DLQRemoved("a", "purged"), "dlq_removed", map[string]any{"item_id": "a", "reason": "purged"}},
	{DLQRetryStarted(4, 2), "dlq_retry_started", map[string]any{"items": 4, "max_parallel": 2}},
	{DLQRetryFinished(ItemCounts{Total: 4, Succeeded: 3, DLQ: 1}), "dlq_retry_finished",
		map[string]any{"total": 4, "succeeded": 3, "failed": 0, "skipped": 0, "dlq": 1, "pending": 0}},
	{AttemptStarted("process", 1).WithItem("a"), "attempt_started", map[string]any{"step": "process", "attempt": 1, "item_id": "a"}},
}

func TestConstructorsBuildTheFieldsWritersBuilt(t *testing.T) {
	for _, c := range constructed {
		if string(c.got.Type) != c.typ || !reflect.DeepEqual(c.got.Fields, c.fields) {
			t.Errorf("got %s %#v\nwant %s %#v", c.got.Type, c.got.Fields, c.typ, c.fields)
		}
		want, _ := c.fields["item_id"].(string)
		if c.got.ItemID != want {
			t.Errorf("%s: ItemID %q, want %q", c.typ, c.got.ItemID, want)
		}
	}
}

// Every type has a constructor.
func TestEveryTypeIsConstructed(t *testing.T) {
	built := map[Type]bool{}
	for _, c := range constructed {
		built[c.got.Type] = true
	}
	for _, typ := range Types {
		if !built[typ] {
			t.Errorf("no constructor in the table builds %s", typ)
		}
	}
}

// WithItem adds the item to a copy: the event it was called on keeps its
// fields.
func TestWithItemCopies(t *testing.T) {
	e := StepStarted("build", 1, "make")
	withItem := e.WithItem("a")
	if _, ok := e.Fields["item_id"]; ok || e.ItemID != "" {
		t.Errorf("WithItem changed its receiver: %+v", e)
	}
	if withItem.ItemID != "a" || withItem.Str("item_id") != "a" || withItem.Str("step") != "build" {
		t.Errorf("WithItem = %+v", withItem)
	}
}

func TestJobEnded(t *testing.T) {
	for _, typ := range Types {
		want := typ == TypeJobCompleted || typ == TypeJobFailed || typ == TypeJobStopped || typ == TypeJobInterrupted
		if JobEnded(typ) != want {
			t.Errorf("JobEnded(%s) = %v", typ, !want)
		}
	}
}

// The events of a command's end keep the tails of its output: the last
// OutputTailSize bytes, from a character's start; empty streams add no
// field.
func TestWithOutput(t *testing.T) {
	long := "é" + strings.Repeat("x", OutputTailSize-2) + "\n" // the cut falls inside é
	e := StepCompleted("build", 0, time.Second).WithOutput(long, "")
	tail := e.Str("stdout_tail")
	if len(tail) != OutputTailSize-1 || !strings.HasSuffix(tail, "x\n") || !utf8.ValidString(tail) {
		t.Errorf("stdout_tail of %d bytes (valid UTF-8 %v): want the last %d bytes from a character's start", len(tail), utf8.ValidString(tail), OutputTailSize-1)
	}
	if _, ok := e.Fields["stderr_tail"]; ok {
		t.Errorf("an empty stderr has a stderr_tail")
	}
	f := AttemptFailed(Failure{Step: "build", Attempt: 1, Kind: "exit", Stdout: "out\n", Stderr: "err\n"})
	if f.Str("stdout_tail") != "out\n" || f.Str("stderr_tail") != "err\n" {
		t.Errorf("attempt_failed fields %v: want both tails", f.Fields)
	}
}

// The run of a NATS task that sent an event is added beside the event's
// own fields: a step_repeat keeps its "run" (the repeat's).
func TestWithRunKeepsTheEventsFields(t *testing.T) {
	e := StepRepeat("poll", 3, time.Second).WithRun("1.0.2", 5)
	if e.Int("run") != 3 || e.Str("run_id") != "1.0.2" || e.Int("seq") != 5 || e.Str("step") != "poll" {
		t.Errorf("fields %v, want run 3, run_id 1.0.2, seq 5, step poll", e.Fields)
	}
}

// Two runs of an agent spent what both did: tokens, cost, turns and API
// time summed, the later run's session and model.
func TestAgentUsageAdd(t *testing.T) {
	a := AgentUsage{InputTokens: 1, OutputTokens: 2, CacheReadTokens: 3, CacheWriteTokens: 4, CostUSD: 0.25, Turns: 2, APITime: time.Second, SessionID: "a", Model: "m1"}
	b := AgentUsage{InputTokens: 10, OutputTokens: 20, CacheReadTokens: 30, CacheWriteTokens: 40, CostUSD: 0.5, Turns: 3, APITime: 2 * time.Second, SessionID: "b"}
	got := a.Add(b)
	want := AgentUsage{InputTokens: 11, OutputTokens: 22, CacheReadTokens: 33, CacheWriteTokens: 44, CostUSD: 0.75, Turns: 5, APITime: 3 * time.Second, SessionID: "b", Model: "m1"}
	if got != want {
		t.Errorf("Add = %+v, want %+v", got, want)
	}
	if got.Tokens() != 110 {
		t.Errorf("Tokens = %d, want 110", got.Tokens())
	}
}

// An agent_usage event read back from the log, and an AgentUsage through
// its JSON, say what the agent spent.
func TestAgentUsageReadBack(t *testing.T) {
	u := AgentUsage{InputTokens: 31, OutputTokens: 1411, CacheReadTokens: 9, CacheWriteTokens: 8, CostUSD: 0.1873, Turns: 7, APITime: 45102 * time.Millisecond, SessionID: "s", Model: "m"}
	data, err := json.Marshal(AgentUsageOf("fix", 2, u))
	if err != nil {
		t.Fatal(err)
	}
	var e Event
	if err := json.Unmarshal(data, &e); err != nil {
		t.Fatal(err)
	}
	if got, ok := e.Usage(); !ok || got != u {
		t.Errorf("Usage() = %+v, %v; want %+v", got, ok, u)
	}
	if _, ok := StepSkipped("x", "y").Usage(); ok {
		t.Error("a step_skipped event has a usage")
	}
	data, err = json.Marshal(u)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"input_tokens":31,"output_tokens":1411,"cache_read_tokens":9,"cache_write_tokens":8,"cost_usd":0.1873,"turns":7,"session_id":"s","model":"m","api_ms":45102,"tokens":1459}`
	if string(data) != want {
		t.Errorf("JSON %s, want %s", data, want)
	}
	var back AgentUsage
	if err := json.Unmarshal(data, &back); err != nil || back != u {
		t.Errorf("read back %+v, %v", back, err)
	}
}
