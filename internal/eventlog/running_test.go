package eventlog

import "testing"

// Running keeps each running agent's last figures and forgets them when
// the run ends: its agent_usage (which the job's spend counts), the end
// of its attempt, or the end of its item however it ended.
func TestRunningKeepsTheLastFiguresOfRunningAgents(t *testing.T) {
	spent := func(usd float64) AgentUsage { return AgentUsage{CostUSD: usd, OutputTokens: int64(usd * 1000)} }
	progress := func(item, step string, attempt int, usd float64) Event {
		return AgentProgress(step, attempt, spent(usd)).WithItem(item)
	}
	var r Running
	for _, c := range []struct {
		event Event
		want  float64
	}{
		{progress("a", "fix", 1, 0.01), 0.01},
		{progress("a", "fix", 1, 0.03), 0.03}, // the last figures, not a sum
		{progress("b", "fix", 1, 0.02), 0.05},
		{progress("", "setup", 1, 0.1), 0.15},
		{AgentUsageOf("fix", 1, spent(0.04)).WithItem("a"), 0.12},
		{progress("b", "fix", 1, 0.025), 0.125},
		{AttemptFailed(Failure{Step: "setup", Attempt: 1, Kind: "timeout"}), 0.025},
		{progress("b", "check", 1, 0.01), 0.035},
		{ItemFailed("b", Failure{Step: "check"}, "dlq", "b"), 0},
	} {
		r.Observe(c.event)
		if got := r.Sum(); got.CostUSD != c.want || got.OutputTokens != int64(c.want*1000) {
			t.Fatalf("after %s of %q %s: sum %+v, want $%v", c.event.Type, c.event.ItemID, c.event.Str("step"), got, c.want)
		}
	}
}
