package plan

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/runnerdev/runner/internal/executor"
	"github.com/runnerdev/runner/workflow"
)

// WriteText prints the plan for people.
func (p Plan) WriteText(w io.Writer) error {
	tw := &errWriter{w: w}
	tw.printf("workflow %q (%s); nothing is run\n", p.Workflow, p.Mode)
	for _, ph := range p.Phases {
		if ph.Phase == "agent_template" && p.Map != nil {
			p.Map.writeText(tw)
		}
		if ph.Timeout != nil {
			tw.printf("%s (the whole phase times out after %v):\n", ph.Phase, ph.Timeout)
		} else {
			tw.printf("%s:\n", ph.Phase)
		}
		for i, s := range ph.Steps {
			if b := s.Parallel; b != nil && (i == 0 || ph.Steps[i-1].Parallel == nil || ph.Steps[i-1].Parallel.Block != b.Block) {
				b.writeText(tw)
			}
			s.writeText(tw, p.Seed)
		}
	}
	if p.End != nil {
		tw.printf("end: %s\n", p.End.text())
	}
	if p.ErrorPolicy != nil {
		p.ErrorPolicy.writeText(tw)
	}
	if p.Budget != nil {
		p.Budget.writeText(tw)
	}
	return tw.err
}

// writeText heads the steps of a parallel: block.
func (b *Parallel) writeText(w *errWriter) {
	stop := "fail_fast: a failure cancels the others"
	if !b.FailFast {
		stop = "fail_fast: false: every step runs, then a failure stops the workflow"
	}
	w.printf("  %s: the steps below run at the same time, at most %d at once; %s\n", b.Block, b.MaxParallel, stop)
}

// text says how the job branch is merged when the job succeeds.
func (e *End) text() string {
	when := "with runner run --merge"
	if e.MergeBack {
		when = "always (merge_back: true)"
	}
	if !e.MergeBlock {
		return "when the job succeeds, git merge --no-ff merges the job branch into the branch the job started on, " + when + "; otherwise it is left for you to merge"
	}
	text := "when the job succeeds, the merge phase's steps run in the job worktree to merge the job branch (instead of git merge), " + when
	if e.Timeout != nil {
		text += fmt.Sprintf("; the whole phase times out after %v", e.Timeout)
	}
	return text
}

func (m *Map) writeText(w *errWriter) {
	parts := []string{"input " + m.Input}
	add := func(cond bool, format string, args ...any) {
		if cond {
			parts = append(parts, fmt.Sprintf(format, args...))
		}
	}
	add(m.JSONPath != "", "json_path %s", m.JSONPath)
	add(m.Filter != "", "filter %s", m.Filter)
	add(len(m.SortBy) > 0, "sort_by %s", strings.Join(m.SortBy, ", "))
	add(m.Distinct != "", "distinct %s", m.Distinct)
	add(m.Offset > 0, "offset %d", m.Offset)
	add(m.MaxItems > 0, "max_items %d", m.MaxItems)
	add(m.ItemID != "", "item_id %s", m.ItemID)
	add(true, "max_parallel %s", m.MaxParallel)
	add(m.AgentTimeout != nil, "agent_timeout %v", m.AgentTimeout)
	w.printf("map: %s\n", strings.Join(parts, "; "))
	w.printf("  isolation: %s\n", m.isolationText())
}

// isolationText says where items run and why.
func (m *Map) isolationText() string {
	text := m.Isolation
	switch {
	case m.Isolation == string(workflow.IsolationNone):
		text += ": items run in this directory, all in the same checkout"
	case m.Merge:
		text += ": each item runs in a git worktree of its own, on a branch merged into the job branch runner/<job id> when it succeeds"
	default:
		text += ": each item runs in a git worktree of its own, on a branch kept unmerged (map.merge: none)"
	}
	if m.IsolationDefault {
		text += " (the default"
		if m.Isolation == string(workflow.IsolationWorktree) {
			text += " for an agent template with a claude: step or commit_required, or a file with merge: or merge_back: true"
		}
		text += ")"
	}
	return text
}

// writeText says what the budget stops.
func (b *Budget) writeText(w *errWriter) {
	var parts []string
	if b.MaxCostUSD > 0 {
		parts = append(parts, fmt.Sprintf("no item starts once the job's agents spent $%g", b.MaxCostUSD))
	}
	if b.MaxTokens > 0 {
		parts = append(parts, fmt.Sprintf("no item starts once they spent %d tokens", b.MaxTokens))
	}
	if b.ItemMaxCostUSD > 0 {
		parts = append(parts, fmt.Sprintf("an item whose agents spend over $%g fails (kind budget)", b.ItemMaxCostUSD))
	}
	if b.ItemMaxTokens > 0 {
		parts = append(parts, fmt.Sprintf("an item whose agents spend over %d tokens fails (kind budget)", b.ItemMaxTokens))
	}
	w.printf("budget: %s\n", strings.Join(parts, "; "))
}

func (pe *ErrorPolicy) writeText(w *errWriter) {
	parts := []string{"on_item_failure " + string(pe.OnItemFailure)}
	if !pe.ContinueOnFailure {
		parts = append(parts, "stop at the first failed item")
	}
	if pe.MaxFailures > 0 {
		parts = append(parts, fmt.Sprintf("stop after %d failed items", pe.MaxFailures))
	}
	if pe.FailureThreshold > 0 {
		parts = append(parts, fmt.Sprintf("stop above %g%% failed once %d items finished", 100*pe.FailureThreshold, pe.MinItems))
	}
	coll := pe.ErrorCollection
	if coll == "batched" {
		coll = fmt.Sprintf("batched every %d", pe.BatchSize)
	}
	parts = append(parts, "failures shown "+coll)
	w.printf("error policy: %s\n", strings.Join(parts, "; "))
	if pe.ItemRetry != nil {
		w.printf("  item retry: %s\n", pe.ItemRetry.text(nil))
	}
	if b := pe.CircuitBreaker; b != nil {
		w.printf("  workflow circuit breaker: after %d consecutive item failures no item starts for %s; then %d probe(s) at a time, %d success(es) close it\n",
			b.FailureThreshold, b.Timeout, b.HalfOpenRequests, b.SuccessThreshold)
	}
}

func (s Step) writeText(w *errWriter, seed *uint64) {
	if strings.HasSuffix(s.Step, "step "+strconv.Itoa(s.Index)) { // unnamed: what it runs tells it apart
		w.printf("  %d. %s: %s\n", s.Index, s.Step, s.Command)
	} else {
		w.printf("  %d. %s\n", s.Index, s.Step)
	}
	switch {
	case s.AgentError != "":
		w.printf("     runs: no agent program: %s\n", s.AgentError)
	case s.Kind == workflow.ClaudeCommand:
		w.printf("     runs: %s with the text as its last argument (%s)\n", executor.Agent{Command: s.Agent}, s.AgentFrom)
	case s.WithoutShell == executor.NoShellAlways:
		w.printf("     runs: the program directly, without a shell (a plain list of words)\n")
	case s.WithoutShell == executor.NoShellPlainValues:
		w.printf("     runs: the program directly, without a shell, when the values it interpolates hold no single quote\n")
	}
	if s.Parallel != nil {
		w.printf("     in: %s\n", s.Parallel.Block)
	}
	if s.CommitRequired {
		w.printf("     commit_required: fails as no_commit unless it makes a git commit\n")
	}
	if s.AutoCommit {
		w.printf("     auto_commit: commits what it leaves uncommitted when it made no commit\n")
	}
	if s.Timeout != nil {
		w.printf("     timeout: %s per attempt\n", s.Timeout)
	}
	switch {
	case s.RetryDisabled:
		w.printf("     retry: disabled by retryable: false (runs once)\n")
	case len(s.Retry) == 0:
		w.printf("     retry: none (runs once)\n")
	}
	for i, p := range s.Retry {
		label := "retry"
		if len(s.Retry) > 1 {
			label = fmt.Sprintf("retry policy %d", i+1)
		}
		w.printf("     %s: %s\n", label, p.text(seed))
	}
	if s.CircuitBreaker != nil {
		w.printf("     circuit breaker: opens after %d failures for %s\n", s.CircuitBreaker.FailureThreshold, s.CircuitBreaker.Timeout)
	}
	if s.FixAttempts > 0 {
		w.printf("     on failure: handler, then the step again: up to %d runs in all\n", s.FixAttempts)
	} else if s.OnFailure != "" {
		w.printf("     on failure: %s\n", s.OnFailure)
	}
	if s.Validate != nil {
		s.Validate.writeText(w)
	}
	s.Foreach.writeText(w, seed)
}

// writeText describes a validate block on one line.
func (v Validate) writeText(w *errWriter) {
	check := fmt.Sprintf("%d check command(s)", v.Checks)
	if v.Checks == 0 {
		check = "the step's own command"
	}
	result := "the last one's stdout"
	if v.ResultFile != "" {
		result = "result_file " + v.ResultFile
	}
	below := "the step fails"
	switch {
	case v.MaxAttempts > 0 && v.FailWorkflow:
		below = fmt.Sprintf("on_incomplete up to %d attempt(s), then the step fails", v.MaxAttempts)
	case v.MaxAttempts > 0:
		below = fmt.Sprintf("on_incomplete up to %d attempt(s), then the workflow goes on", v.MaxAttempts)
	}
	w.printf("     validate: %s, result in %s; complete at %g%%, below it %s\n", check, result, v.Threshold, below)
}

// text describes a policy: attempts, the delays before attempts 2..N and
// their total, labelled with what they are, and the bounds.
func (p Policy) text(seed *uint64) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d attempts, %s backoff", p.Attempts, p.Backoff)
	if len(p.Delays) > 0 {
		var delays []string
		for _, d := range p.Delays {
			if p.DelaysAre == delaysJittered || p.DelaysAre == delaysPerItem {
				delays = append(delays, fmt.Sprintf("%s-%s", d.Min, d.Max))
			} else {
				delays = append(delays, d.Delay.String())
			}
		}
		if p.MoreDelays > 0 {
			delays = append(delays, fmt.Sprintf("... (%d more)", p.MoreDelays))
		}
		list := strings.Join(delays, ", ")
		switch p.DelaysAre {
		case delaysFixed:
			fmt.Fprintf(&b, "; delays %s (total %s)", list, p.Total)
		case delaysSeeded:
			fmt.Fprintf(&b, "; delays with seed %d: %s (total %s)", *seed, list, p.Total)
		case delaysJittered:
			fmt.Fprintf(&b, "; delays jittered in %s (total %s-%s; --seed N shows a run's exact delays)", list, p.MinTotal, p.MaxTotal)
		case delaysPerItem:
			fmt.Fprintf(&b, "; delays jittered per item in %s (total %s-%s)", list, p.MinTotal, p.MaxTotal)
		}
	}
	fmt.Fprintf(&b, "; max_delay %s", p.MaxDelay)
	switch p.Jitter {
	case "proportional":
		fmt.Fprintf(&b, "; jitter ±%g%%", p.JitterFactor*50)
	case "full":
		b.WriteString("; full jitter (each delay uniform in [0, delay])")
	}
	if p.Budget > 0 {
		fmt.Fprintf(&b, "; budget %s", p.Budget)
	}
	if len(p.RetryOn) > 0 {
		fmt.Fprintf(&b, "; retry_on %s", strings.Join(p.RetryOn, ", "))
	}
	if p.RetryAfter {
		b.WriteString("; honours Retry-After")
	}
	return b.String()
}

// errWriter keeps the first write error of a series of prints.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) printf(format string, args ...any) {
	if e.err == nil {
		_, e.err = fmt.Fprintf(e.w, format, args...)
	}
}
