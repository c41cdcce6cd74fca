package mapreduce

import (
	"context"
	"fmt"
	"time"

	"github.com/runnerdev/runner/errorpolicy"
	"github.com/runnerdev/runner/internal/eventlog"
	"github.com/runnerdev/runner/internal/itemtask"
	"github.com/runnerdev/runner/internal/job"
)

// KindBudget is the failure kind of an item whose agents spent more than
// its limit (budget.item_max_cost_usd, item_max_tokens): never retried.
const KindBudget = "budget"

// budgetOf is j's budget: its workflow's, with the max_cost_usd given on
// the command line (run or resume --budget-usd) when there is one.
func budgetOf(j *job.Job) errorpolicy.Budget {
	return j.Workflow().Budget.WithCost(j.Meta().BudgetUSD)
}

// withinBudget reports whether the job's spend is within its budget; when
// it is not, it stops the job (no more items start; those running finish,
// or with --hard are stopped too) and records why.
func (s *scheduler) withinBudget() bool {
	if !s.budget.Set() {
		return true
	}
	spent := s.spent()
	v := s.budget.Reached(spent.CostUSD, spent.Tokens())
	if v == nil {
		return true
	}
	limit, max := v.Limit(), float64(s.budget.MaxTokens)
	if limit == errorpolicy.LimitCost {
		max = s.budget.MaxCostUSD
		v.Reason = fmt.Sprintf("its agents spent %s, budget.%s is %s", eventlog.CostText(spent.CostUSD), limit, eventlog.CostText(max))
	} else {
		v.Reason = fmt.Sprintf("its agents spent %d tokens, budget.%s is %d", spent.Tokens(), limit, s.budget.MaxTokens)
	}
	s.mu.Lock()
	running := len(s.active)
	s.mu.Unlock()
	s.halt(v, eventlog.BudgetReached(limit, max, spent, running))
	if s.stopItems != nil {
		s.stopItems(&StoppedError{Verdict: *v})
	}
	return false
}

// itemsContext is the context the items run under, which a budget's stop
// ends when hard is set (--hard), and the function that releases it.
func (s *scheduler) itemsContext(ctx context.Context, hard bool) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(ctx)
	if hard {
		s.stopItems = cancel
	}
	return ctx, func() { cancel(nil) }
}

// overItemLimit turns the outcome of an item's attempt into a failure of
// kind budget when spent, what all its attempts' agents spent, is over the
// item's limit.
func (s *scheduler) overItemLimit(out itemtask.Outcome, attempt int, spent *eventlog.AgentUsage) itemtask.Outcome {
	if spent == nil {
		return out
	}
	limit := s.budget.ItemOver(spent.CostUSD, spent.Tokens())
	if limit == "" {
		return out
	}
	max := fmt.Sprintf("%d tokens", s.budget.ItemMaxTokens)
	if limit == errorpolicy.LimitItemCost {
		max = eventlog.CostText(s.budget.ItemMaxCostUSD)
	}
	out.Failed, out.Failure = true, itemtask.Failure{Attempt: attempt, At: time.Now(), Kind: KindBudget, ExitCode: -1, Duration: out.Duration,
		Step: out.Failure.Step, StderrTail: out.Failure.StderrTail,
		Message: fmt.Sprintf("its agents spent %s, over budget.%s %s", spent, limit, max)}
	return out
}
