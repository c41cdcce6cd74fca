package job

import (
	"io"
	"path/filepath"
	"testing"

	"github.com/runnerdev/runner/internal/eventlog"
	"github.com/runnerdev/runner/internal/state"
)

// Spent is what the agents that ended spent, all the job's runs, with
// the last figures of those still running: an agent that ends moves
// from one to the other, counted once.
func TestSpentCountsRunningAgents(t *testing.T) {
	src := "- shell: 'true'\n"
	store := state.Store{Dir: filepath.Join(t.TempDir(), ".runner")}
	j, err := Start(parse(t, "w.yml", src), []byte(src), Options{Store: store, JobID: "s", Stdout: io.Discard, Stderr: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	defer j.close()
	usd := func(v float64) eventlog.AgentUsage {
		return eventlog.AgentUsage{CostUSD: v, InputTokens: int64(v * 1e4)}
	}
	for _, c := range []struct {
		event eventlog.Event
		want  float64
	}{
		{eventlog.AgentUsageOf("plan", 1, usd(0.5)), 0.5},
		{eventlog.AgentProgress("fix", 1, usd(0.1)).WithItem("a"), 0.6},
		{eventlog.AgentProgress("fix", 1, usd(0.2)).WithItem("b"), 0.8},
		{eventlog.AgentProgress("fix", 1, usd(0.3)).WithItem("a"), 1},
		{eventlog.AgentUsageOf("fix", 1, usd(0.35)).WithItem("a"), 1.05},
		{eventlog.ItemFailed("b", eventlog.Failure{Step: "fix"}, "dlq", "b"), 0.85},
	} {
		j.Emit(c.event)
		if got := j.Spent(); got.CostUSD != c.want || got.InputTokens != int64(c.want*1e4) {
			t.Fatalf("after %s of %q: spent %+v, want $%v", c.event.Type, c.event.ItemID, got, c.want)
		}
	}
	if m := j.Meta(); m.Spend == nil || m.Spend.CostUSD != 0.85 {
		t.Errorf("the metadata's spend %+v, want the agents that ended: $0.85", m.Spend)
	}
}
