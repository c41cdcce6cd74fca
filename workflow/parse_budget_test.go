package workflow

import (
	"strings"
	"testing"

	"github.com/runnerdev/runner/errorpolicy"
)

const budgetMap = "mode: mapreduce\nmap: {input: x, agent_template: [{claude: x}]}\n"

func TestParseBudget(t *testing.T) {
	wf, err := Parse("b.yml", []byte(budgetMap+"budget: {max_cost_usd: 25, max_tokens: 2000000, item_max_cost_usd: 0.5, item_max_tokens: 90000}\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := errorpolicy.Budget{MaxCostUSD: 25, MaxTokens: 2_000_000, ItemMaxCostUSD: 0.5, ItemMaxTokens: 90_000}
	if wf.Budget != want {
		t.Errorf("budget %+v, want %+v", wf.Budget, want)
	}
	wf, err = Parse("b.yml", []byte(budgetMap))
	if err != nil || wf.Budget.Set() {
		t.Errorf("no budget: key: %+v, %v; want no limit", wf.Budget, err)
	}
}

func TestParseBudgetErrors(t *testing.T) {
	tests := []struct{ src, want string }{
		{"budget: 25\n", `3:9: budget must be a mapping`},
		{"budget: {max_cost_usd: 0}\n", `3:24: budget.max_cost_usd must be above 0`},
		{"budget: {max_cost_usd: -1}\n", `3:24: budget.max_cost_usd must be above 0`},
		{"budget: {max_cost_usd: lots}\n", `3:24: budget.max_cost_usd must be a number, not`},
		{"budget: {item_max_cost_usd: .nan}\n", `3:29: budget.item_max_cost_usd must be a number`},
		{"budget: {max_tokens: 1.5}\n", `3:22: budget.max_tokens must be a whole number`},
		{"budget: {item_max_tokens: 0}\n", `3:27: budget.item_max_tokens must be at least 1, not 0`},
		{"budget: {max_cost: 5}\n", `3:10: unknown key "max_cost" in budget (did you mean "max_cost_usd"?)`},
	}
	for _, tt := range tests {
		errs := parseErr(t, "m.yml", budgetMap+tt.src)
		found := false
		for _, e := range errs {
			found = found || strings.Contains(e, tt.want)
		}
		if !found {
			t.Errorf("%q:\nwant %s\n got %s", tt.src, tt.want, strings.Join(errs, "\n     "))
		}
	}
	if errs := parseErr(t, "s.yml", "commands: [{shell: x}]\nbudget: {max_cost_usd: 5}\n"); len(errs) == 0 || !strings.Contains(errs[0], `2:1: "budget" belongs to MapReduce workflows`) {
		t.Errorf("a standard workflow's budget: %v", errs)
	}
}
