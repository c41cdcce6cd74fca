package eventlog

import (
	"fmt"
	"testing"
	"time"
)

// AppendLine lays a line out as the "%s  %-18s %s\n" it replaced did:
// the type padded to 18 characters (not bytes), a longer one not cut.
func TestAppendEventLinePadsTheTypeAsFmt(t *testing.T) {
	at := time.Date(2026, 11, 22, 10, 0, 0, 123456789, time.UTC)
	for _, typ := range []string{"", "a", "item_succeeded", "dlq_retry_finished", "a_type_longer_than_eighteen", "événement_spécial"} {
		e := Event{Time: at, Type: Type(typ), Fields: map[string]any{"n": 1}}
		want := fmt.Sprintf("%s  %-18s %s\n", at.Local().Format(time.DateTime+".000"), typ, e.Describe())
		if got := string(e.AppendLine([]byte("kept"))); got != "kept"+want {
			t.Errorf("got  %q\nwant %q", got, "kept"+want)
		}
	}
}

// Describe words the events a job writes; a type it does not know shows
// its fields.
func TestDescribe(t *testing.T) {
	for _, tc := range []struct {
		e    Event
		want string
	}{
		{StepStarted("build", 1, "make all\nmake install"), "build: make all …"},
		{AttemptFailed(Failure{Step: "build", Attempt: 2, Kind: "exit", ExitCode: 22, Message: "boom", Duration: 1500 * time.Millisecond}).WithItem("a"),
			"item a build: attempt 2 failed (exit 22) after 1.5s: boom"},
		{RetryDecision("build", Decision{Attempt: 2, Action: "retry", Delay: 2100 * time.Millisecond, Reason: "matched rate_limit", Limit: 5, Count: 2, Kind: "exit", ExitCode: 22}),
			"build: attempt 2/5 failed (exit 22, matched rate_limit); retrying in 2.1s"},
		{RetryDecision("build", Decision{Attempt: 3, Action: "stop", Reason: "attempts exhausted", Limit: 3, Count: 3, Kind: "timeout"}),
			"build: attempt 3/3 failed (timed out); giving up: attempts exhausted"},
		{JobFinished("failed", 1, 2*time.Second, nil, nil), "failed, exit 1, after 2s"},
		{AgentUsageOf("fix", 2, AgentUsage{CostUSD: 0.1873, InputTokens: 125988}), "fix attempt 2: its agent spent $0.19, 126k tokens"},
		{AgentProgress("fix", 1, AgentUsage{CostUSD: 0.0031, OutputTokens: 900}).WithItem("a"), "item a fix attempt 1: its agent has spent $0.0031, 900 tokens so far"},
		{ItemSucceeded("a", 1, 30*time.Millisecond), "item a in 30ms"},
		{ItemSucceeded("a", 1, 30*time.Millisecond).WithWorker("w1", 2), "item a in 30ms (worker w1)"},
		{ResultDuplicate("a", 2, 3, "w1", 5), "item a: attempt 2 has a result; dropped another from worker w1 (delivery 5, epoch 3)"},
		{TaskRedelivered("a", 1, 2, "w2", "w1"), "item a: attempt 1's task delivered again, to worker w2 (delivery 2); worker w1 had it"},
		{TaskRedelivered("a", 1, 3, "w2", ""), "item a: attempt 1's task delivered again, to worker w2 (delivery 3)"},
		{NATSStreams(1, "RUNNER_TASKS R3, RUNNER_RESULTS R3, KV_RUNNER_JOBS R1"), "NATS streams: RUNNER_TASKS R3, RUNNER_RESULTS R3, KV_RUNNER_JOBS R1"},
		{NATSUnavailable("RUNNER_TASKS", "context deadline exceeded"), "NATS stream RUNNER_TASKS unavailable: context deadline exceeded; waiting for it"},
		{NATSRestored("RUNNER_TASKS", 2500*time.Millisecond), "NATS streams answer again, after 2.5s"},
		{JobChanged("ci.yml", "workflow.1.yml", []string{"REGION", "MODE"}), "runs ci.yml now (the copy it replaces is kept as workflow.1.yml); set REGION, MODE"},
		{JobChanged("", "", []string{"REGION"}), "set REGION"},
		{JobChanged("", "", []string{"REGION"}).WithBudget(20), "set REGION; budget $20.00"},
		{BudgetReached("max_cost_usd", 1, AgentUsage{CostUSD: 1.3111, InputTokens: 881916}, 2), "budget.max_cost_usd $1.00 reached: agents spent $1.31, 882k tokens; items running: 2"},
		{BudgetReached("max_tokens", 500000, AgentUsage{CostUSD: 0.1, OutputTokens: 501000}, 0), "budget.max_tokens 500000 reached: agents spent $0.10, 501k tokens; items running: 0"},
		{MapStarted(3, 2, 1, "none"), `isolation="none" max_parallel=1 pending=2 total=3`},
	} {
		if got := tc.e.Describe(); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.e.Type, got, tc.want)
		}
	}
}

// Spend is shown to the cent (a hundredth of one below a cent) and its
// tokens in three digits or fewer.
func TestAgentUsageString(t *testing.T) {
	for _, c := range []struct {
		usd    float64
		tokens int64
		want   string
	}{
		{0.1873, 125988, "$0.19, 126k tokens"},
		{0.0031, 987, "$0.0031, 987 tokens"},
		{0, 0, "$0.00, 0 tokens"},
		{41.5, 999_499, "$41.50, 999k tokens"},
		{41.5, 999_500, "$41.50, 1.0M tokens"},
		{412, 12_345_678, "$412.00, 12.3M tokens"},
	} {
		if got := (AgentUsage{CostUSD: c.usd, InputTokens: c.tokens}).String(); got != c.want {
			t.Errorf("String of (%v, %d) = %q, want %q", c.usd, c.tokens, got, c.want)
		}
	}
}
