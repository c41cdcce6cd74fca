package executor

import "strings"

// modelPrice is a Claude model's list price in USD per million input and
// output tokens; Anthropic bills a cache write at 1.25 times the input
// price (the 5-minute cache Claude Code uses) and a cache read at 0.1
// times.
type modelPrice struct {
	model         string // a part of the model's name
	input, output float64
}

// modelPrices are Anthropic's list prices, the first whose part the
// model's name contains applies. A model none names (a newer one) is
// counted at the highest price, so that a running agent's cost is not
// taken for less than it can be.
var modelPrices = []modelPrice{
	{"opus-4-5", 5, 25},
	{"opus", 15, 75}, // Opus 4, 4.1 and 3
	{"sonnet", 3, 15},
	{"haiku-4-5", 1, 5},
	{"3-5-haiku", 0.8, 4},
	{"3-haiku", 0.25, 1.25},
}

// highestPrice is what a model not in modelPrices is counted at.
var highestPrice = modelPrice{input: 15, output: 75}

// estimateCost is what u's tokens of model cost at list prices: a
// running agent's cost, which Claude Code reports only in its result.
func estimateCost(model string, u streamUsage) float64 {
	p := highestPrice
	for _, mp := range modelPrices {
		if strings.Contains(model, mp.model) {
			p = mp
			break
		}
	}
	return (float64(u.InputTokens)*p.input + float64(u.CacheCreationInputTokens)*p.input*1.25 +
		float64(u.CacheReadInputTokens)*p.input*0.1 + float64(u.OutputTokens)*p.output) / 1e6
}
