package cmd

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/runnerdev/runner/errorpolicy"
	"github.com/runnerdev/runner/retryv2"
	"github.com/runnerdev/runner/workflow"
)

// dryRun prints what a workflow would run and the retry schedule each
// step's policies imply, and runs nothing.
func dryRun(w io.Writer, wf *workflow.Workflow) error {
	fmt.Fprintf(w, "workflow %q (%s); nothing is run\n", wf.Name, wf.Mode)
	if wf.Mode == workflow.MapReduce {
		printSteps(w, "setup", wf.Setup)
		if wf.Map != nil {
			printMap(w, wf.Map)
			printSteps(w, "agent_template", wf.Map.Template)
		}
		printSteps(w, "reduce", wf.Reduce)
		printErrorPolicy(w, wf)
		return nil
	}
	printSteps(w, "commands", wf.Steps)
	return nil
}

// printMap describes the input pipeline and the agents.
func printMap(w io.Writer, m *workflow.MapPhase) {
	parts := []string{"input " + strings.TrimSpace(m.Input.String())}
	if m.JSONPath != "" {
		parts = append(parts, "json_path "+m.JSONPath)
	}
	if m.Filter != nil {
		parts = append(parts, "filter "+m.Filter.Source)
	}
	if len(m.SortBy) > 0 {
		var keys []string
		for _, k := range m.SortBy {
			key := k.Field
			if k.Desc {
				key += " DESC"
			}
			if k.NullsFirst {
				key += " NULLS FIRST"
			}
			keys = append(keys, key)
		}
		parts = append(parts, "sort_by "+strings.Join(keys, ", "))
	}
	if m.Distinct != "" {
		parts = append(parts, "distinct "+m.Distinct)
	}
	if m.Offset > 0 {
		parts = append(parts, fmt.Sprintf("offset %d", m.Offset))
	}
	if m.MaxItems > 0 {
		parts = append(parts, fmt.Sprintf("max_items %d", m.MaxItems))
	}
	if m.ItemID != nil {
		parts = append(parts, "item_id "+m.ItemID.String())
	}
	parts = append(parts, "max_parallel "+m.MaxParallel)
	if m.AgentTimeout > 0 {
		parts = append(parts, "agent_timeout "+m.AgentTimeout.String())
	}
	fmt.Fprintf(w, "map: %s\n", strings.Join(parts, "; "))
}

// printErrorPolicy describes what happens to failed items.
func printErrorPolicy(w io.Writer, wf *workflow.Workflow) {
	p := wf.ErrorPolicy
	parts := []string{"on_item_failure " + string(p.OnItemFailure)}
	if !p.ContinueOnFailure {
		parts = append(parts, "stop at the first failed item")
	}
	if p.MaxFailures > 0 {
		parts = append(parts, fmt.Sprintf("stop after %d failed items", p.MaxFailures))
	}
	if p.FailureThreshold > 0 {
		parts = append(parts, fmt.Sprintf("stop above %g%% failed once %d items finished", 100*p.FailureThreshold, p.MinItems))
	}
	coll := p.Collection.Mode
	if coll == "batched" {
		coll = fmt.Sprintf("batched every %d", p.Collection.BatchSize)
	}
	parts = append(parts, "failures shown "+coll)
	fmt.Fprintf(w, "error policy: %s\n", strings.Join(parts, "; "))
	if p.OnItemFailure == errorpolicy.Retry && wf.ItemRetry != nil {
		fmt.Fprintf(w, "  item retry: %s\n", schedule(*wf.ItemRetry))
	}
	if b := p.Breaker; b != nil {
		fmt.Fprintf(w, "  workflow circuit breaker: after %d consecutive item failures no item starts for %s; then %d probe(s) at a time, %d success(es) close it\n",
			b.FailureThreshold, b.Timeout, b.HalfOpenRequests, b.SuccessThreshold)
	}
}

func printSteps(w io.Writer, phase string, steps []*workflow.Step) {
	if len(steps) == 0 {
		return
	}
	fmt.Fprintf(w, "%s:\n", phase)
	for _, s := range steps {
		fmt.Fprintf(w, "  %d. %s\n", s.Index+1, s.Label())
		if s.Timeout > 0 {
			fmt.Fprintf(w, "     timeout: %s per attempt\n", s.Timeout)
		}
		switch {
		case len(s.Retry) == 0:
			fmt.Fprintln(w, "     retry: none (runs once)")
		case !s.Retryable:
			fmt.Fprintln(w, "     retry: disabled by retryable: false (runs once)")
		default:
			for i, p := range s.Retry {
				label := "retry"
				if len(s.Retry) > 1 {
					label = fmt.Sprintf("retry policy %d", i+1)
				}
				fmt.Fprintf(w, "     %s: %s\n", label, schedule(p))
			}
		}
		if s.Breaker != nil {
			fmt.Fprintf(w, "     circuit breaker: opens after %d failures for %s\n", s.Breaker.FailureThreshold, s.Breaker.Timeout)
		}
		if s.OnFailure.Action != "" && s.OnFailure.Action != workflow.FailStop {
			fmt.Fprintf(w, "     on failure: %s\n", s.OnFailure.Action)
		}
	}
}

// schedule describes a policy: attempts, the delays before attempts 2..N,
// their total, and the bounds.
func schedule(p retryv2.Policy) string {
	var delays []string
	var total time.Duration
	for k := 1; k < p.Attempts; k++ {
		d := p.Delay(k, func() float64 { return 0.5 }) // the middle of any jitter range
		total += d
		delays = append(delays, d.String())
		if k == 12 && p.Attempts > 14 {
			delays = append(delays, fmt.Sprintf("... (%d more)", p.Attempts-1-k))
			for k++; k < p.Attempts; k++ {
				total += p.Delay(k, func() float64 { return 0.5 })
			}
			break
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d attempts, %s backoff", p.Attempts, p.Backoff.Strategy)
	if len(delays) > 0 {
		fmt.Fprintf(&b, "; delays %s (total %s)", strings.Join(delays, ", "), total)
	}
	fmt.Fprintf(&b, "; max_delay %s", p.MaxDelay)
	switch p.Jitter {
	case retryv2.ProportionalJitter:
		fmt.Fprintf(&b, "; jitter ±%g%%", p.JitterFactor*50)
	case retryv2.FullJitter:
		b.WriteString("; full jitter (each delay uniform in [0, delay])")
	}
	if p.Budget > 0 {
		fmt.Fprintf(&b, "; budget %s", p.Budget)
	}
	if len(p.RetryOn) > 0 {
		var on []string
		for _, m := range p.RetryOn {
			on = append(on, m.Source)
		}
		fmt.Fprintf(&b, "; retry_on %s", strings.Join(on, ", "))
	}
	if p.RetryAfter {
		b.WriteString("; honours Retry-After")
	}
	return b.String()
}
