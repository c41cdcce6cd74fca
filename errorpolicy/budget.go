package errorpolicy

import "strings"

// Budget is what a job's agents may spend: the whole job (every phase
// and every run of it) and each map item (all its attempts), in USD and
// in tokens. A zero limit is no limit.
type Budget struct {
	MaxCostUSD     float64
	MaxTokens      int64
	ItemMaxCostUSD float64
	ItemMaxTokens  int64
}

// The budget's limits as the workflow file names them; a Verdict of a
// job limit has the rule "budget." and its name.
const (
	LimitCost     = "max_cost_usd"
	LimitTokens   = "max_tokens"
	LimitItemCost = "item_max_cost_usd"
	LimitItemToks = "item_max_tokens"
)

// budgetRule prefixes the Rule of a Verdict that a job limit gave.
const budgetRule = "budget."

// Set reports whether b limits anything.
func (b Budget) Set() bool { return b != Budget{} }

// WithCost is b with its job limit in USD set to usd (a budget given on
// the command line), or b itself when usd is 0.
func (b Budget) WithCost(usd float64) Budget {
	if usd > 0 {
		b.MaxCostUSD = usd
	}
	return b
}

// Reached returns the job limit that a spend of costUSD and tokens
// reaches, as a Verdict whose Reason the caller writes, or nil while the
// spend is within it.
func (b Budget) Reached(costUSD float64, tokens int64) *Verdict {
	switch {
	case b.MaxCostUSD > 0 && costUSD >= b.MaxCostUSD:
		return &Verdict{Rule: budgetRule + LimitCost}
	case b.MaxTokens > 0 && tokens >= b.MaxTokens:
		return &Verdict{Rule: budgetRule + LimitTokens}
	}
	return nil
}

// ItemOver names the item limit that an item's spend of costUSD and
// tokens goes over (LimitItemCost or LimitItemToks), or "" when it is
// within both.
func (b Budget) ItemOver(costUSD float64, tokens int64) string {
	switch {
	case b.ItemMaxCostUSD > 0 && costUSD > b.ItemMaxCostUSD:
		return LimitItemCost
	case b.ItemMaxTokens > 0 && tokens > b.ItemMaxTokens:
		return LimitItemToks
	}
	return ""
}

// Budget reports whether a job limit of a Budget gave v (not a failure
// rule of the error policy).
func (v Verdict) Budget() bool { return v.Limit() != "" }

// Limit is the name of the job limit that gave v, "" when none did.
func (v Verdict) Limit() string {
	if limit, ok := strings.CutPrefix(v.Rule, budgetRule); ok {
		return limit
	}
	return ""
}
