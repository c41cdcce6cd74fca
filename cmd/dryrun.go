package cmd

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/runnerdev/runner/breaker"
	"github.com/runnerdev/runner/dlq"
	"github.com/runnerdev/runner/errorpolicy"
	"github.com/runnerdev/runner/executor"
	"github.com/runnerdev/runner/job"
	"github.com/runnerdev/runner/retryv2"
	"github.com/runnerdev/runner/workflow"
)

// dryRun prints what a workflow would run and the retry schedule each
// step's policies imply, as text or as one JSON document, and runs
// nothing. With a seed, jittered delays are those the run with that seed
// waits; without one, they are ranges.
func dryRun(w io.Writer, wf *workflow.Workflow, seed *uint64, asJSON bool) error {
	p := newPlan(wf, seed)
	if asJSON {
		return writeJSON(w, p)
	}
	return p.writeText(w)
}

// plan is the dry run's document (`run --dry-run --output json`).
type plan struct {
	Workflow    string           `json:"workflow"`
	Mode        workflow.Mode    `json:"mode"`
	Seed        *uint64          `json:"seed,omitempty"`
	Phases      []planPhase      `json:"phases"`
	Map         *planMap         `json:"map,omitempty"`
	ErrorPolicy *planErrorPolicy `json:"error_policy,omitempty"`
}

type planPhase struct {
	Phase string     `json:"phase"` // commands, setup, agent_template or reduce
	Steps []planStep `json:"steps"`
}

type planStep struct {
	Index          int          `json:"index"` // 1-based, in its phase
	Step           string       `json:"step"`  // the name events and messages use
	Label          string       `json:"label"`
	Timeout        *millis      `json:"timeout_ms,omitempty"` // per attempt
	Retry          []planPolicy `json:"retry"`                // empty: runs once
	RetryDisabled  bool         `json:"retry_disabled,omitempty"`
	CircuitBreaker *planBreaker `json:"circuit_breaker,omitempty"`
	OnFailure      string       `json:"on_failure,omitempty"`
}

// planPolicy is one retry policy and the delays it implies, each
// assuming this policy handles every failure of the step.
type planPolicy struct {
	Attempts     int         `json:"attempts"`
	Backoff      string      `json:"backoff"`
	MaxDelay     millis      `json:"max_delay_ms"`
	Jitter       string      `json:"jitter"`                  // none, proportional or full
	JitterFactor float64     `json:"jitter_factor,omitempty"` // proportional
	DelaysAre    string      `json:"delays_are"`              // see the delays* constants
	Delays       []planDelay `json:"delays"`                  // the first maxListedDelays
	MoreDelays   int         `json:"more_delays,omitempty"`   // not listed
	Total        millis      `json:"total_ms"`
	MinTotal     millis      `json:"min_total_ms"`
	MaxTotal     millis      `json:"max_total_ms"`
	Budget       millis      `json:"budget_ms,omitempty"`
	RetryOn      []string    `json:"retry_on,omitempty"`
	RetryAfter   bool        `json:"retry_after,omitempty"`
}

// What a plan's delay_ms are.
const (
	delaysFixed    = "fixed"    // no jitter: the delays
	delaysSeeded   = "seeded"   // drawn from --seed as the run draws them: the delays that run waits
	delaysJittered = "jittered" // no --seed: each in [min_ms, max_ms]; delay_ms is the midpoint
	delaysPerItem  = "per_item" // drawn for each item (from the seed and its id): each waits its own, in [min_ms, max_ms]; delay_ms is the midpoint
)

// maxListedDelays bounds the delays a plan lists per policy.
const maxListedDelays = 12

type planDelay struct {
	AfterFailure int    `json:"after_failure"` // the policy's k-th failure
	Delay        millis `json:"delay_ms"`
	Min          millis `json:"min_ms"`
	Max          millis `json:"max_ms"`
}

type planBreaker struct {
	FailureThreshold int    `json:"failure_threshold"`
	SuccessThreshold int    `json:"success_threshold"`
	HalfOpenRequests int    `json:"half_open_requests"`
	Timeout          millis `json:"timeout_ms"`
}

type planMap struct {
	Input        string   `json:"input"`
	JSONPath     string   `json:"json_path,omitempty"`
	Filter       string   `json:"filter,omitempty"`
	SortBy       []string `json:"sort_by,omitempty"` // "field [DESC] [NULLS FIRST]"
	Distinct     string   `json:"distinct,omitempty"`
	Offset       int      `json:"offset,omitempty"`
	MaxItems     int      `json:"max_items,omitempty"`
	ItemID       string   `json:"item_id,omitempty"`
	MaxParallel  string   `json:"max_parallel"` // a number or $VAR
	AgentTimeout *millis  `json:"agent_timeout_ms,omitempty"`
}

type planErrorPolicy struct {
	OnItemFailure     errorpolicy.Action `json:"on_item_failure"`
	ContinueOnFailure bool               `json:"continue_on_failure"`
	MaxFailures       int                `json:"max_failures,omitempty"`
	FailureThreshold  float64            `json:"failure_threshold,omitempty"`
	MinItems          int                `json:"min_items"`
	ErrorCollection   string             `json:"error_collection"`
	BatchSize         int                `json:"batch_size,omitempty"`
	ItemRetry         *planPolicy        `json:"item_retry,omitempty"` // on_item_failure: retry
	CircuitBreaker    *planBreaker       `json:"circuit_breaker,omitempty"`
}

// millis is a duration written in JSON as whole milliseconds, as events
// write delay_ms, and shown truncated to them.
type millis time.Duration

func (m millis) MarshalJSON() ([]byte, error) {
	return strconv.AppendInt(nil, time.Duration(m).Milliseconds(), 10), nil
}

func (m millis) String() string { return time.Duration(m).Truncate(time.Millisecond).String() }

func optMillis(d time.Duration) *millis {
	if d <= 0 {
		return nil
	}
	m := millis(d)
	return &m
}

func newPlan(wf *workflow.Workflow, seed *uint64) plan {
	p := plan{Workflow: wf.Name, Mode: wf.Mode, Seed: seed, Phases: []planPhase{}}
	phase := func(name string, steps []*workflow.Step, perItem bool) {
		if len(steps) == 0 {
			return
		}
		ph := planPhase{Phase: name}
		for _, s := range steps {
			ph.Steps = append(ph.Steps, newPlanStep(s, seed, perItem))
		}
		p.Phases = append(p.Phases, ph)
	}
	if wf.Mode != workflow.MapReduce {
		phase(job.PhaseCommands, wf.Steps, false)
		return p
	}
	phase(job.PhaseSetup, wf.Setup, false)
	if wf.Map != nil {
		p.Map = newPlanMap(wf.Map)
		phase("agent_template", wf.Map.Template, true)
	}
	phase(job.PhaseReduce, wf.Reduce, false)
	p.ErrorPolicy = newPlanErrorPolicy(wf)
	return p
}

// newPlanStep describes a step. Its jittered delays come from the random
// source the run gives the step with that seed; for agent_template steps
// (perItem) that source depends on the item too, so they are ranges.
func newPlanStep(s *workflow.Step, seed *uint64, perItem bool) planStep {
	ps := planStep{Index: s.Index + 1, Step: s.Key(), Label: s.Label(), Timeout: optMillis(s.Timeout), Retry: []planPolicy{}, RetryDisabled: len(s.Retry) > 0 && !s.Retryable}
	if !ps.RetryDisabled {
		for _, p := range s.Retry {
			var rnd func() float64
			if seed != nil && !perItem {
				rnd = executor.JitterSource(*seed, s, "") // each policy as if it handled every failure
			}
			ps.Retry = append(ps.Retry, newPlanPolicy(p, rnd, perItem))
		}
	}
	if s.Breaker != nil {
		ps.CircuitBreaker = newPlanBreaker(*s.Breaker)
	}
	if a := s.OnFailure.Action; a != "" && a != workflow.FailStop {
		ps.OnFailure = string(a)
	}
	return ps
}

// newPlanPolicy computes a policy's delays: drawn from rnd, as the run's
// retry loop draws them (once per delay of a jittered policy), or, when
// rnd is nil, the midpoints of their ranges.
func newPlanPolicy(p retryv2.Policy, rnd func() float64, perItem bool) planPolicy {
	pp := planPolicy{Attempts: p.Attempts, Backoff: string(p.Backoff.Strategy), MaxDelay: millis(p.MaxDelay), Jitter: "none",
		DelaysAre: delaysFixed, Delays: []planDelay{}, Budget: millis(p.Budget), RetryAfter: p.RetryAfter}
	switch p.Jitter {
	case retryv2.ProportionalJitter:
		pp.Jitter, pp.JitterFactor = "proportional", p.JitterFactor
	case retryv2.FullJitter:
		pp.Jitter = "full"
	}
	if p.Jitter != retryv2.NoJitter {
		switch {
		case rnd != nil:
			pp.DelaysAre = delaysSeeded
		case perItem:
			pp.DelaysAre = delaysPerItem
		default:
			pp.DelaysAre = delaysJittered
		}
	}
	if rnd == nil {
		rnd = func() float64 { return 0.5 }
	}
	for k := 1; k < p.Attempts; k++ {
		d := planDelay{AfterFailure: k, Delay: millis(p.Delay(k, rnd)),
			Min: millis(p.Delay(k, func() float64 { return 0 })), Max: millis(p.Delay(k, func() float64 { return 1 }))}
		pp.Total += d.Delay
		pp.MinTotal += d.Min
		pp.MaxTotal += d.Max
		if len(pp.Delays) < maxListedDelays {
			pp.Delays = append(pp.Delays, d)
		} else {
			pp.MoreDelays++
		}
	}
	for _, m := range p.RetryOn {
		pp.RetryOn = append(pp.RetryOn, m.Source)
	}
	return pp
}

func newPlanBreaker(c breaker.Config) *planBreaker {
	return &planBreaker{FailureThreshold: c.FailureThreshold, SuccessThreshold: c.SuccessThreshold, HalfOpenRequests: c.HalfOpenRequests, Timeout: millis(c.Timeout)}
}

func newPlanMap(m *workflow.MapPhase) *planMap {
	pm := &planMap{Input: strings.TrimSpace(m.Input.String()), JSONPath: m.JSONPath, Distinct: m.Distinct, Offset: m.Offset,
		MaxItems: m.MaxItems, MaxParallel: m.MaxParallel, AgentTimeout: optMillis(m.AgentTimeout)}
	if m.Filter != nil {
		pm.Filter = m.Filter.Source
	}
	for _, k := range m.SortBy {
		key := k.Field
		if k.Desc {
			key += " DESC"
		}
		if k.NullsFirst {
			key += " NULLS FIRST"
		}
		pm.SortBy = append(pm.SortBy, key)
	}
	if m.ItemID != nil {
		pm.ItemID = m.ItemID.String()
	}
	return pm
}

// newPlanErrorPolicy describes what happens to failed items. Item retry
// delays are drawn per item, so they are ranges.
func newPlanErrorPolicy(wf *workflow.Workflow) *planErrorPolicy {
	p := wf.ErrorPolicy
	pe := &planErrorPolicy{OnItemFailure: p.OnItemFailure, ContinueOnFailure: p.ContinueOnFailure, MaxFailures: p.MaxFailures,
		FailureThreshold: p.FailureThreshold, MinItems: p.MinItems, ErrorCollection: p.Collection.Mode, BatchSize: p.Collection.BatchSize}
	if p.OnItemFailure == errorpolicy.Retry && wf.ItemRetry != nil {
		r := newPlanPolicy(*wf.ItemRetry, nil, true)
		pe.ItemRetry = &r
	}
	if p.Breaker != nil {
		pe.CircuitBreaker = newPlanBreaker(*p.Breaker)
	}
	return pe
}

// dlqRetryPlan is the document of `dlq retry --dry-run --output json`.
type dlqRetryPlan struct {
	JobID    string     `json:"job_id"`
	Selected int        `json:"selected"`
	Items    []dlq.Item `json:"items"`
}

// dlqRetryDryRun lists the DLQ items `dlq retry` would run, as lines of
// item id and item or as one JSON document, and runs nothing.
func dlqRetryDryRun(g *globalOptions, jobID, filter string, asJSON bool) error {
	selected, err := dlqItems(g, jobID, filter, 0)
	if err != nil {
		return err
	}
	if asJSON {
		err = writeJSON(g.stdout, dlqRetryPlan{JobID: jobID, Selected: len(selected), Items: append([]dlq.Item{}, selected...)})
	} else {
		w := &errWriter{w: g.stdout}
		for _, it := range selected {
			w.printf("%s\t%s\n", it.ItemID, it.Item)
		}
		err = w.err
	}
	if err != nil {
		return fmt.Errorf("dlq retry %s: %w", jobID, err)
	}
	fmt.Fprintf(g.stderr, "%d item(s) would be retried; nothing was run\n", len(selected))
	return nil
}
