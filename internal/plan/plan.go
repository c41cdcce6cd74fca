package plan

import (
	"cmp"
	"strconv"
	"strings"
	"time"

	"github.com/runnerdev/runner/errorpolicy"
	"github.com/runnerdev/runner/internal/breaker"
	"github.com/runnerdev/runner/internal/executor"
	"github.com/runnerdev/runner/internal/job"
	"github.com/runnerdev/runner/retryv2"
	"github.com/runnerdev/runner/workflow"
)

// Plan is the dry run's document (`run --dry-run --output json`).
type Plan struct {
	Workflow    string        `json:"workflow"`
	Mode        workflow.Mode `json:"mode"`
	Seed        *uint64       `json:"seed,omitempty"`
	Phases      []Phase       `json:"phases"`
	Map         *Map          `json:"map,omitempty"`
	End         *End          `json:"end,omitempty"`
	ErrorPolicy *ErrorPolicy  `json:"error_policy,omitempty"`
	Budget      *Budget       `json:"budget,omitempty"`
}

// Budget is what the job's agents may spend (budget:, its max_cost_usd
// as --budget-usd gives it); a zero limit is none.
type Budget struct {
	MaxCostUSD     float64 `json:"max_cost_usd,omitempty"`
	MaxTokens      int64   `json:"max_tokens,omitempty"`
	ItemMaxCostUSD float64 `json:"item_max_cost_usd,omitempty"`
	ItemMaxTokens  int64   `json:"item_max_tokens,omitempty"`
}

// End is what happens to the job branch (a map with isolation: worktree,
// or a standard workflow with merge: or merge_back: true) when the job
// succeeds.
type End struct {
	// MergeBack (merge_back: true): it is merged into the branch the job
	// started on; otherwise only with --merge.
	MergeBack bool `json:"merge_back"`
	// MergeBlock: the merge phase's steps (the merge: block) merge it,
	// instead of runner's git merge.
	MergeBlock bool    `json:"merge_block"`
	Timeout    *millis `json:"merge_timeout_ms,omitempty"` // the merge phase's
}

// Phase is one phase of the workflow and its steps.
type Phase struct {
	Phase   string  `json:"phase"` // commands, setup, agent_template, reduce or merge
	Steps   []Step  `json:"steps"`
	Timeout *millis `json:"timeout_ms,omitempty"` // setup: the whole phase's
}

// Step is one step: what it runs and how it is retried.
type Step struct {
	Index          int                  `json:"index"`                // 1-based, in its phase
	Step           string               `json:"step"`                 // its label (workflow.Step.Label), as events and messages name it
	Kind           workflow.CommandKind `json:"kind"`                 // shell, claude, write_file or foreach
	Command        string               `json:"command"`              // its first line (workflow.Step.CommandLine)
	Agent          []string             `json:"agent,omitempty"`      // claude: the program and its first arguments; the text is one more
	AgentFrom      string               `json:"agent_from,omitempty"` // agent.command, RUNNER_AGENT_COMMAND or default
	AgentError     string               `json:"agent_error,omitempty"`
	WithoutShell   string               `json:"without_shell,omitempty"` // a shell step run as its program directly: always, or plain_values (see executor.WithoutShell)
	CommitRequired bool                 `json:"commit_required,omitempty"`
	AutoCommit     bool                 `json:"auto_commit,omitempty"`
	Timeout        *millis              `json:"timeout_ms,omitempty"` // per attempt
	Retry          []Policy             `json:"retry"`                // empty: runs once
	RetryDisabled  bool                 `json:"retry_disabled,omitempty"`
	CircuitBreaker *Breaker             `json:"circuit_breaker,omitempty"`
	OnFailure      string               `json:"on_failure,omitempty"`
	Validate       *Validate            `json:"validate,omitempty"`
	Foreach        *Foreach             `json:"foreach,omitempty"`      // a foreach step's loop
	Parallel       *Parallel            `json:"parallel,omitempty"`     // the parallel: block the step runs in
	FixAttempts    int                  `json:"fix_attempts,omitempty"` // on_failure's max_attempts: runs of the step in all, a handler run between two
}

// Parallel is the parallel: block a step runs in, with the others of
// the block at the same time.
type Parallel struct {
	Block       string `json:"block"`        // its label (workflow.Parallel.Label), as the steps' events name it
	MaxParallel int    `json:"max_parallel"` // steps at once
	FailFast    bool   `json:"fail_fast"`
}

// newParallel describes the block s runs in, or nil.
func newParallel(s *workflow.Step, phase string) *Parallel {
	p := s.Parallel
	if p == nil {
		return nil
	}
	return &Parallel{Block: p.Label(phase), MaxParallel: cmp.Or(p.MaxParallel, p.Count), FailFast: p.FailFast}
}

// Validate is a step's validate block: its check and on_incomplete.
type Validate struct {
	Threshold    float64 `json:"threshold"`
	Checks       int     `json:"checks"`                // commands of the check; 0: the step's own command
	ResultFile   string  `json:"result_file,omitempty"` // "": the last check command's stdout
	MaxAttempts  int     `json:"max_attempts"`          // on_incomplete attempts; 0: none
	FailWorkflow bool    `json:"fail_workflow"`         // still incomplete: the step fails (else it is handled)
}

// Policy is one retry policy and the delays it implies, each
// assuming this policy handles every failure of the step.
type Policy struct {
	Attempts     int      `json:"attempts"`
	Backoff      string   `json:"backoff"`
	MaxDelay     millis   `json:"max_delay_ms"`
	Jitter       string   `json:"jitter"`                  // none, proportional or full
	JitterFactor float64  `json:"jitter_factor,omitempty"` // proportional
	DelaysAre    string   `json:"delays_are"`              // see the delays* constants
	Delays       []Delay  `json:"delays"`                  // the first maxListedDelays
	MoreDelays   int      `json:"more_delays,omitempty"`   // not listed
	Total        millis   `json:"total_ms"`
	MinTotal     millis   `json:"min_total_ms"`
	MaxTotal     millis   `json:"max_total_ms"`
	Budget       millis   `json:"budget_ms,omitempty"`
	RetryOn      []string `json:"retry_on,omitempty"`
	RetryAfter   bool     `json:"retry_after,omitempty"`
}

// What a plan's delay_ms are.
const (
	delaysFixed    = "fixed"    // no jitter: the delays
	delaysSeeded   = "seeded"   // drawn from --seed as the run draws them: the delays that run waits
	delaysJittered = "jittered" // no --seed: each in [min_ms, max_ms]; delay_ms is the midpoint
	delaysPerItem  = "per_item" // drawn for each item (from the seed and its id): each waits its own, in [min_ms, max_ms]; delay_ms is the midpoint
)

// maxListedDelays bounds the delays a Plan lists per policy.
const maxListedDelays = 12

// Delay is the wait before one retry: exact, or a range when jittered.
type Delay struct {
	AfterFailure int    `json:"after_failure"` // the policy's k-th failure
	Delay        millis `json:"delay_ms"`
	Min          millis `json:"min_ms"`
	Max          millis `json:"max_ms"`
}

// Breaker is a circuit breaker's settings.
type Breaker struct {
	FailureThreshold int    `json:"failure_threshold"`
	SuccessThreshold int    `json:"success_threshold"`
	HalfOpenRequests int    `json:"half_open_requests"`
	Timeout          millis `json:"timeout_ms"`
}

// Map is the map phase: its input and how items are run.
type Map struct {
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
	Isolation    string   `json:"isolation"` // none or worktree
	// IsolationDefault says that the file does not set map.isolation:
	// Isolation is the default for its agent template.
	IsolationDefault bool `json:"isolation_default,omitempty"`
	Merge            bool `json:"merge"` // isolation worktree: items' branches are merged back
}

// ErrorPolicy is the workflow error policy of a MapReduce workflow.
type ErrorPolicy struct {
	OnItemFailure     errorpolicy.Action `json:"on_item_failure"`
	ContinueOnFailure bool               `json:"continue_on_failure"`
	MaxFailures       int                `json:"max_failures,omitempty"`
	FailureThreshold  float64            `json:"failure_threshold,omitempty"`
	MinItems          int                `json:"min_items"`
	ErrorCollection   string             `json:"error_collection"`
	BatchSize         int                `json:"batch_size,omitempty"`
	ItemRetry         *Policy            `json:"item_retry,omitempty"` // on_item_failure: retry
	CircuitBreaker    *Breaker           `json:"circuit_breaker,omitempty"`
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

// New describes wf, whose claude: steps would run agent. With a seed,
// jittered delays are those a run with that seed waits; without one, they
// are ranges.
func New(wf *workflow.Workflow, seed *uint64, agent executor.Agent) Plan {
	p := Plan{Workflow: wf.Name, Mode: wf.Mode, Seed: seed, Phases: []Phase{}}
	phase := func(name string, steps []*workflow.Step, perItem bool) {
		labelPhase := name
		if perItem {
			labelPhase = workflow.PhaseMap
		}
		if len(steps) == 0 {
			return
		}
		ph := Phase{Phase: name}
		for _, s := range steps {
			ph.Steps = append(ph.Steps, newStep(s, labelPhase, seed, perItem, agent))
		}
		p.Phases = append(p.Phases, ph)
	}
	if wf.Mode != workflow.MapReduce {
		phase(job.PhaseCommands, wf.Steps, false)
	} else {
		phase(job.PhaseSetup, wf.Setup, false)
		if len(wf.Setup) > 0 {
			p.Phases[len(p.Phases)-1].Timeout = optMillis(wf.SetupTimeout)
		}
		if wf.Map != nil {
			p.Map = newMap(wf.Map)
			phase("agent_template", wf.Map.Template, true)
		}
		phase(job.PhaseReduce, wf.Reduce, false)
		p.ErrorPolicy = newErrorPolicy(wf)
		if b := wf.Budget; b.Set() {
			p.Budget = &Budget{MaxCostUSD: b.MaxCostUSD, MaxTokens: b.MaxTokens, ItemMaxCostUSD: b.ItemMaxCostUSD, ItemMaxTokens: b.ItemMaxTokens}
		}
	}
	if wf.RunsInWorktree() {
		p.End = &End{MergeBack: wf.MergeBack}
		if wf.Merge != nil {
			p.End.MergeBlock, p.End.Timeout = true, optMillis(wf.Merge.Timeout)
			phase(job.PhaseMerge, wf.Merge.Steps, false)
		}
	}
	return p
}

// newStep describes a step. Its jittered delays come from the random
// source the run gives the step with that seed; for agent_template steps
// (perItem) that source depends on the item too, so they are ranges.
func newStep(s *workflow.Step, phase string, seed *uint64, perItem bool, agent executor.Agent) Step {
	ps := Step{Index: s.Index + 1, Step: s.Label(phase), Kind: s.Command.Kind, Command: s.CommandLine(), Timeout: optMillis(s.Timeout), Retry: []Policy{}, RetryDisabled: len(s.Retry) > 0 && !s.Retryable,
		CommitRequired: s.CommitRequired, AutoCommit: s.AutoCommit, WithoutShell: executor.WithoutShell(s.Command)}
	if s.Command.Kind == workflow.ClaudeCommand {
		ps.Agent, ps.AgentFrom = agent.Argv(), agent.From
		if agent.Err != nil {
			ps.AgentError = agent.Err.Error()
		}
	}
	if !ps.RetryDisabled {
		for _, p := range s.Retry {
			var rnd func() float64
			if seed != nil && !perItem {
				rnd = executor.JitterSource(*seed, s, "") // each policy as if it handled every failure
			}
			ps.Retry = append(ps.Retry, newPolicy(p, rnd, perItem))
		}
	}
	if s.Breaker != nil {
		ps.CircuitBreaker = newBreaker(*s.Breaker)
	}
	ps.Foreach = newForeach(s, seed, perItem, agent)
	ps.Parallel = newParallel(s, phase)
	if a := s.OnFailure.Action; a != "" && a != workflow.FailStop {
		ps.OnFailure, ps.FixAttempts = string(a), s.OnFailure.MaxAttempts
	}
	if v := s.Validate; v != nil {
		ps.Validate = &Validate{Threshold: v.Threshold, Checks: len(v.Checks), FailWorkflow: true}
		if v.ResultFile != nil {
			ps.Validate.ResultFile = v.ResultFile.String()
		}
		if in := v.OnIncomplete; in != nil {
			ps.Validate.MaxAttempts, ps.Validate.FailWorkflow = in.MaxAttempts, in.FailWorkflow
		}
	}
	return ps
}

// newPolicy computes a policy's delays: drawn from rnd, as the run's
// retry loop draws them (once per delay of a jittered policy), or, when
// rnd is nil, the midpoints of their ranges.
func newPolicy(p retryv2.Policy, rnd func() float64, perItem bool) Policy {
	pp := Policy{Attempts: p.Attempts, Backoff: string(p.Backoff.Strategy), MaxDelay: millis(p.MaxDelay), Jitter: "none",
		DelaysAre: delaysFixed, Delays: []Delay{}, Budget: millis(p.Budget), RetryAfter: p.RetryAfter}
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
		d := Delay{AfterFailure: k, Delay: millis(p.Delay(k, rnd)),
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

func newBreaker(c breaker.Config) *Breaker {
	return &Breaker{FailureThreshold: c.FailureThreshold, SuccessThreshold: c.SuccessThreshold, HalfOpenRequests: c.HalfOpenRequests, Timeout: millis(c.Timeout)}
}

func newMap(m *workflow.MapPhase) *Map {
	pm := &Map{Input: strings.TrimSpace(m.Input.String()), JSONPath: m.JSONPath, Distinct: m.Distinct, Offset: m.Offset,
		MaxItems: m.MaxItems, MaxParallel: m.MaxParallel, AgentTimeout: optMillis(m.AgentTimeout),
		Isolation: string(m.Isolation), IsolationDefault: !m.IsolationSet, Merge: m.Isolation == workflow.IsolationWorktree && !m.NoMerge}
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

// newErrorPolicy describes what happens to failed items. Item retry
// delays are drawn per item, so they are ranges.
func newErrorPolicy(wf *workflow.Workflow) *ErrorPolicy {
	p := wf.ErrorPolicy
	pe := &ErrorPolicy{OnItemFailure: p.OnItemFailure, ContinueOnFailure: p.ContinueOnFailure, MaxFailures: p.MaxFailures,
		FailureThreshold: p.FailureThreshold, MinItems: p.MinItems, ErrorCollection: p.Collection.Mode, BatchSize: p.Collection.BatchSize}
	if p.OnItemFailure == errorpolicy.Retry && wf.ItemRetry != nil {
		r := newPolicy(*wf.ItemRetry, nil, true)
		pe.ItemRetry = &r
	}
	if p.Breaker != nil {
		pe.CircuitBreaker = newBreaker(*p.Breaker)
	}
	return pe
}
