package workflow

import (
	"math"

	"gopkg.in/yaml.v3"

	"github.com/runnerdev/runner/errorpolicy"
)

var budgetKeys = []string{errorpolicy.LimitCost, errorpolicy.LimitTokens, errorpolicy.LimitItemCost, errorpolicy.LimitItemToks}

// budget reads budget: {max_cost_usd, max_tokens, item_max_cost_usd,
// item_max_tokens}: costs above 0, tokens at least 1. It is runner's own
// key, not Prodigy's: a key it does not know is an error, never passed
// over (a misspelt limit would be no limit).
func (d *decoder) budget(n *yaml.Node) errorpolicy.Budget {
	var b errorpolicy.Budget
	f := d.keyed(n, "budget", budgetKeys, true)
	if f == nil {
		return b
	}
	cost := func(key string) float64 {
		v := f.get(key)
		if v == nil {
			return 0
		}
		usd, ok := d.number(v, "budget."+key, -math.MaxFloat64, math.MaxFloat64)
		if ok && usd <= 0 {
			d.errorf(v, "budget.%s must be above 0 (USD, such as 25 or 0.50); leave it out for no limit", key)
		}
		if usd <= 0 {
			return 0
		}
		return usd
	}
	tokens := func(key string) int64 {
		v := f.get(key)
		if v == nil {
			return 0
		}
		n, _ := d.integer(v, "budget."+key, 1)
		return int64(n)
	}
	b.MaxCostUSD, b.MaxTokens = cost(errorpolicy.LimitCost), tokens(errorpolicy.LimitTokens)
	b.ItemMaxCostUSD, b.ItemMaxTokens = cost(errorpolicy.LimitItemCost), tokens(errorpolicy.LimitItemToks)
	return b
}
