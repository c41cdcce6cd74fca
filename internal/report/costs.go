package report

import (
	"slices"

	"github.com/runnerdev/runner/internal/eventlog"
)

// maxCostliest is how many of the costliest items the page lists.
const maxCostliest = 10

// itemCost is an item's ending and what its agents spent over its
// attempts, as its item_succeeded or item_failed event tells it.
type itemCost struct {
	Item   string
	Status string // succeeded or failed
	Cost   string // "$0.19, 126k tokens"
	usd    float64
}

// costliest keeps the items whose agents spent the most, at most
// maxCostliest of them (an item that ended twice, by a dlq retry, by its
// last ending), in memory that does not grow with the items.
type costliest struct{ items []itemCost }

// add takes one event of the job, in order.
func (c *costliest) add(e eventlog.Event) {
	u, ok := e.ItemUsage()
	if !ok {
		return
	}
	status := "succeeded"
	if e.Type == eventlog.TypeItemFailed {
		status = "failed"
	}
	c.items = slices.DeleteFunc(c.items, func(it itemCost) bool { return it.Item == e.ItemID })
	c.items = append(c.items, itemCost{Item: e.ItemID, Status: status, Cost: u.String(), usd: u.CostUSD})
	slices.SortStableFunc(c.items, func(a, b itemCost) int {
		switch {
		case a.usd > b.usd:
			return -1
		case a.usd < b.usd:
			return 1
		}
		return 0
	})
	c.items = c.items[:min(len(c.items), maxCostliest)]
}
