package errorpolicy

import "testing"

func TestBudgetReached(t *testing.T) {
	b := Budget{MaxCostUSD: 5, MaxTokens: 1000}
	tests := []struct {
		cost   float64
		tokens int64
		limit  string
	}{
		{4.99, 999, ""},
		{5, 0, LimitCost}, // reaching it is enough
		{7, 2000, LimitCost},
		{0, 1000, LimitTokens},
	}
	for _, tt := range tests {
		v := b.Reached(tt.cost, tt.tokens)
		got := ""
		if v != nil {
			got = v.Limit()
			if !v.Budget() {
				t.Errorf("%v: Budget() false", v)
			}
		}
		if got != tt.limit {
			t.Errorf("Reached(%g, %d) = %q, want %q", tt.cost, tt.tokens, got, tt.limit)
		}
	}
	if v := (Budget{}).Reached(1e9, 1e12); v != nil {
		t.Errorf("no budget reached: %v", v)
	}
	if (&Verdict{Rule: "max_failures"}).Budget() {
		t.Error("max_failures is a budget verdict")
	}
}

func TestBudgetItemOver(t *testing.T) {
	b := Budget{ItemMaxCostUSD: 0.5, ItemMaxTokens: 100}
	for _, tt := range []struct {
		cost   float64
		tokens int64
		limit  string
	}{
		{0.5, 100, ""}, // at the limit is within it
		{0.51, 0, LimitItemCost},
		{0, 101, LimitItemToks},
	} {
		if got := b.ItemOver(tt.cost, tt.tokens); got != tt.limit {
			t.Errorf("ItemOver(%g, %d) = %q, want %q", tt.cost, tt.tokens, got, tt.limit)
		}
	}
}
