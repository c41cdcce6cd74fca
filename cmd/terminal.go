package cmd

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/runnerdev/runner/dlq"
	"github.com/runnerdev/runner/errorpolicy"
	"github.com/runnerdev/runner/internal/eventlog"
	"github.com/runnerdev/runner/internal/executor"
	"github.com/runnerdev/runner/internal/job"
	"github.com/runnerdev/runner/internal/progress"
	"github.com/runnerdev/runner/internal/state"
	"github.com/runnerdev/runner/internal/workspace"
	"github.com/runnerdev/runner/mapreduce"
	"github.com/runnerdev/runner/retryv2"
	"github.com/runnerdev/runner/workflow"
	"github.com/runnerdev/runner/workflow/interp"
)

// terminal shows a running job to a person (text on stderr) or to a
// program (one JSON summary on stdout).
type terminal struct {
	g       *globalOptions
	json    bool
	wf      *workflow.Workflow
	display *progress.Display // the live status, and the streams runner and commands share

	mu       sync.Mutex
	failures []eventlog.Event  // item failures not yet shown (error_collection)
	failed   int               // item failures so far
	noShell  map[string]string // with -v: executor.WithoutShell of each shell step, by label
}

// newTerminal starts showing a job (follow names it, once opened);
// progressMode is auto, always or never.
func newTerminal(g *globalOptions, jsonOutput bool, progressMode string) *terminal {
	return &terminal{g: g, json: jsonOutput, display: progress.New(g.stdout, g.stderr, progressMode, g.NoColor, g.Quiet)}
}

// follow shows the job j, opened: its workflow's steps and what its
// agents spent.
func (t *terminal) follow(j *job.Job) {
	wf := j.Workflow()
	t.wf = wf
	t.display.SetSpent(j.Spent)
	if t.g.Verbose {
		t.noShell = make(map[string]string)
		for _, phase := range workflow.Phases {
			for s := range workflow.AllSteps(wf.StepsOf(phase)) {
				if _, seen := t.noShell[s.Label(phase)]; !seen {
					t.noShell[s.Label(phase)] = executor.WithoutShell(s.Command)
				}
			}
		}
	}
	steps := make(map[string]int)
	for _, phase := range workflow.Phases {
		steps[phase] = len(wf.StepsOf(phase))
	}
	t.display.SetSteps(steps)
	t.display.SetBreaker(wf.ErrorPolicy.Breaker != nil)
}

// commandStdout is where commands' own stdout goes: the terminal's stdout,
// or stderr when stdout carries the JSON document.
func (t *terminal) commandStdout() io.Writer {
	if t.json {
		return t.display.Stderr()
	}
	return t.display.Stdout()
}

// commandStderr is where commands' own stderr goes.
func (t *terminal) commandStderr() io.Writer { return t.display.Stderr() }

// printf prints a line of runner's own above the progress line; failure
// lines are red and breaker lines yellow on a colour terminal.
func (t *terminal) printf(format string, args ...any) {
	text := strings.TrimSuffix(fmt.Sprintf(format, args...), "\n")
	color := ""
	switch {
	case strings.HasPrefix(text, "!!!"):
		color = progress.Red
	case strings.HasPrefix(text, "    circuit breaker"):
		color = progress.Yellow
	}
	t.display.Line(text, color)
}

// askMerge asks, on a terminal, whether to merge the branch of a job
// that succeeded (see console.askMerge), the status line gone first.
func (t *terminal) askMerge(end workspace.End) bool {
	if !t.g.console.canAsk(end) {
		return false
	}
	t.display.Close()
	return t.g.console.askMerge(t.g.stderr, end)
}

// event renders one event as a line, by verbosity.
func (t *terminal) event(e eventlog.Event) {
	t.display.Observe(e)
	if t.g.Quiet {
		return
	}
	if e.ItemID != "" {
		t.itemEvent(e)
		return
	}
	step := e.Str("step")
	switch e.Type {
	case eventlog.TypeItemsLoaded:
		t.printf("loaded %v items from %s\n", e.Fields["total"], e.Str("source"))
	case eventlog.TypeMapStarted:
		t.printf("==> map: %v items, %v to run, max_parallel %v, isolation %v\n", e.Fields["total"], e.Fields["pending"], e.Fields["max_parallel"], e.Fields["isolation"])
	case eventlog.TypeReduceSkipped:
		t.printf("--- skipped reduce (%s)\n", e.Str("reason"))
	case eventlog.TypeNATSStreams:
		t.printf("%s\n", e.Describe())
	case eventlog.TypeNATSUnavailable, eventlog.TypeNATSRestored:
		t.printf("!!! %s\n", e.Describe())
	case eventlog.TypeThresholdReached:
		t.printf("!!! stopping (%s): %s; running items finish, the rest stay pending\n", e.Str("rule"), e.Str("reason"))
	case eventlog.TypeBudgetReached:
		t.printf("!!! stopping: %s; no item starts, the rest stay pending\n", e.Describe())
	case eventlog.TypeStepStarted:
		t.printf("==> %s %s%s\n", progress.InPhase(e.Str("phase"), step), e.Command(), t.shellMarker(step))
	case eventlog.TypeStepSkipped:
		t.printf("--- skipped %s (%s)\n", step, e.Str("reason"))
	case eventlog.TypeStepFailed:
		if h := e.Str("handled"); h != "" {
			t.printf("!!! %s (handled: %s)\n", e.Str("error"), h)
		} else {
			t.printf("!!! %s\n", e.Str("error"))
		}
	case eventlog.TypeHandlerCompleted:
		if err := e.Str("error"); err != "" {
			t.printf("!!! the on_failure handler of %s failed: %s\n", step, err)
		} else {
			t.verbose(e)
		}
	case eventlog.TypeAttemptFailed:
		if t.g.Verbose {
			t.printf("    attempt %v failed: %s\n", e.Fields["attempt"], e.Str("message"))
		}
	case eventlog.TypeRetryDecision:
		if e.Str("reason") != retryv2.ReasonCanceled { // the interrupt is reported on its own
			t.printf("    %s\n", e.RetryText())
		}
	case eventlog.TypeCircuitOpened, eventlog.TypeCircuitHalfOpen, eventlog.TypeCircuitClosed:
		what := "of " + step
		if e.Str("scope") == "workflow" {
			what = "(workflow)"
		}
		t.printf("    circuit breaker %s: %s\n", what, strings.Replace(strings.TrimPrefix(string(e.Type), "circuit_"), "half_open", "half-open", 1))
	default:
		t.verbose(e)
	}
}

// shellMarker marks, with -v, a step that runs its program without a
// shell.
func (t *terminal) shellMarker(step string) string {
	switch t.noShell[step] {
	case executor.NoShellAlways:
		return " (no shell)"
	case executor.NoShellPlainValues:
		return " (no shell for plain values)"
	}
	return ""
}

// verbose shows, with -v, an event that has no line of its own, as
// `runner events` prints it.
func (t *terminal) verbose(e eventlog.Event) {
	if t.g.Verbose {
		t.printf("    %s", e.AppendLine(nil))
	}
}

// itemEvent renders an event of a map agent: item failures per the
// workflow's error_collection, and a task a NATS server delivered again
// (its worker was lost); the rest only with -v.
func (t *terminal) itemEvent(e eventlog.Event) {
	switch e.Type {
	case eventlog.TypeTaskRedelivered:
		t.printf("    %s\n", e.Describe())
	case eventlog.TypeItemFailed:
		t.itemFailed(e)
	case eventlog.TypeStepStarted:
		if t.g.Verbose {
			t.printf("    %s%s\n", strings.TrimSuffix(string(e.AppendLine(nil)), "\n"), t.shellMarker(e.Str("step")))
		}
	default:
		t.verbose(e)
	}
}

// itemFailed shows a final item failure, or keeps it for later, per the
// workflow's error_collection.
func (t *terminal) itemFailed(e eventlog.Event) {
	t.mu.Lock()
	t.failed++
	t.failures = append(t.failures, e)
	due := t.wf != nil && t.wf.ErrorPolicy.Collection.Due(t.failed)
	var show []eventlog.Event
	if due {
		show, t.failures = t.failures, nil
	}
	t.mu.Unlock()
	for _, f := range show {
		t.printf("!!! %s\n", itemFailureLine(f))
	}
}

// itemFailureLine renders a final item failure:
// `item "b" (dlq): step "process" failed: exit status 1: boom`.
func itemFailureLine(e eventlog.Event) string {
	return fmt.Sprintf("item %q (%s): %s", e.ItemID, e.Str("action"), e.Str("message"))
}

// flushFailures shows the item failures not shown yet, grouped by error
// signature (error_collection: aggregate, or a batch not yet full).
func (t *terminal) flushFailures() {
	t.mu.Lock()
	pending := t.failures
	t.failures = nil
	t.mu.Unlock()
	if len(pending) == 0 {
		return
	}
	type group struct {
		example eventlog.Event
		items   []string
	}
	var order []string
	groups := map[string]*group{}
	for _, e := range pending {
		key := e.Str("step") + "\x00" + dlq.Signature(e.Str("message"), dlq.ItemStrings(e.ItemID, e.Fields["item"])...)
		g, ok := groups[key]
		if !ok {
			g = &group{example: e}
			groups[key] = g
			order = append(order, key)
		}
		g.items = append(g.items, e.ItemID)
	}
	t.printf("item failures:\n")
	for _, key := range order {
		g := groups[key]
		items := strings.Join(g.items, ", ")
		if len(g.items) > 10 {
			items = strings.Join(g.items[:10], ", ") + fmt.Sprintf(", ... (%d more)", len(g.items)-10)
		}
		t.printf("  %d × %s\n      items: %s\n", len(g.items), g.example.Str("message"), items)
	}
}

// runSummary is the machine-readable end of `runner run`.
type runSummary struct {
	JobID      string `json:"job_id"`
	Workflow   string `json:"workflow"`
	Status     string `json:"status"`
	ExitCode   int    `json:"exit_code"`
	DurationMS int64  `json:"duration_ms"` // this run
	// RanMS is the time of all the job's runs that ended, this one
	// included; WallClockMS the time from its start to this end, the
	// pauses between runs included. A job run once has the three equal.
	RanMS       int64             `json:"ran_ms"`
	WallClockMS int64             `json:"wall_clock_ms"`
	Steps       *stepCounts       `json:"steps,omitempty"`
	Items       *state.ItemCounts `json:"items,omitempty"`
	// Branch is the job branch (map.isolation: worktree), TargetBranch
	// the branch it merges into, and Merged says that it was merged.
	Branch       string   `json:"branch,omitempty"`
	TargetBranch string   `json:"target_branch,omitempty"`
	Merged       bool     `json:"merged,omitempty"`
	Error        string   `json:"error,omitempty"`
	Handled      []string `json:"handled_failures,omitempty"`
	// Spend is what the job's agents spent, all its runs; nil when none
	// reported it.
	Spend *eventlog.AgentUsage `json:"spend,omitempty"`
}

// durations is the time of a run line: this run's alone for a job run
// once; after a resume this run's, all runs' and the wall clock since
// the job started, each named.
func (s runSummary) durations(resumed int) string {
	this := ms(s.DurationMS)
	if resumed == 0 {
		return this.String()
	}
	return fmt.Sprintf("%s this run (%s in all %d runs, %s wall clock incl. pauses)", this, ms(s.RanMS), resumed+1, ms(s.WallClockMS))
}

// ms is a duration of n milliseconds.
func ms(n int64) time.Duration { return time.Duration(n) * time.Millisecond }

type stepCounts struct {
	Total     int `json:"total"`
	Succeeded int `json:"succeeded"`
	Failed    int `json:"failed"`
	Skipped   int `json:"skipped"`
}

// fileChanged says, under a job that can be resumed, that its workflow
// file changed since the job started (or was last resumed with it), which
// a plain resume does not read, and the command that goes on with it.
func (t *terminal) fileChanged(j *job.Job) {
	if file := changedFile(j); file != "" {
		t.display.Line(fmt.Sprintf("the workflow file %s changed since the job started; to resume with it: runner resume %s --workflow %s", file, j.ID(), file), "")
	}
}

// changedFile is the job's workflow file as a shell word, when it changed
// since the job started (or was last resumed with it); else "".
func changedFile(j *job.Job) string {
	if file := job.ChangedFile(j.Meta()); file != "" {
		return interp.ShellWord(file)
	}
	return ""
}

// inPhase prefixes the message of a MapReduce job's error with the phase
// it stopped the job in, unless the message starts with it already (map
// input: ...). A standard workflow has one phase, which goes unsaid.
func inPhase(err error, msg string) string {
	phase := job.FailedPhase(err)
	if phase == "" || phase == job.PhaseCommands || strings.HasPrefix(msg, phase+" ") || strings.HasPrefix(msg, phase+":") {
		return msg
	}
	return phase + ": " + msg
}

// endOfJob says where the work of a job that ran in git worktrees is;
// merge says that a merge was asked for.
func (t *terminal) endOfJob(res jobResult, merge bool) {
	if res.end.Branch != "" {
		writeEndOfJob(t.g.stderr, res, merge)
	}
}

// summary reports how a job ended.
func (t *terminal) summary(j *job.Job, res jobResult, merge bool) {
	m := j.Meta()
	s := runSummary{
		JobID: j.ID(), Workflow: j.Workflow().Name, Status: string(res.status), ExitCode: res.code,
		DurationMS: j.Elapsed().Milliseconds(), RanMS: m.RanMS, WallClockMS: m.Finished.Sub(m.Started).Milliseconds(), Items: res.items,
		Branch: res.end.Branch, TargetBranch: res.end.Target, Merged: res.end.Merged != "",
		Spend: m.Spend,
	}
	if res.items == nil {
		s.Steps = &stepCounts{Total: len(j.Workflow().Steps), Succeeded: res.steps.Succeeded, Failed: res.steps.Failed, Skipped: res.steps.Skipped}
	}
	if res.err != nil {
		s.Error = res.err.Error()
	}
	for _, h := range res.steps.Handled {
		s.Handled = append(s.Handled, h.Error())
	}
	if !t.g.Quiet && !t.json {
		t.flushFailures()
	}
	t.display.Close()
	if t.json {
		t.display.Document(func(w io.Writer) {
			enc := json.NewEncoder(w)
			enc.SetIndent("", "  ")
			_ = enc.Encode(s)
		})
		t.endOfJob(res, merge)
		return
	}
	line := fmt.Sprintf("%s: %s in %s: ", res.status, j.ID(), s.durations(m.ResumedCount))
	if c := res.items; c != nil {
		line += fmt.Sprintf("%d/%d items succeeded", c.Succeeded, c.Total)
		for _, part := range []struct {
			n    int
			what string
		}{{c.Failed, "failed"}, {c.DLQ, "in the DLQ"}, {c.Skipped, "skipped"}, {c.Pending, "pending"}} {
			if part.n > 0 {
				line += fmt.Sprintf(", %d %s", part.n, part.what)
			}
		}
	} else {
		line += fmt.Sprintf("%d/%d steps succeeded", res.steps.Succeeded, s.Steps.Total)
		if res.steps.Skipped > 0 {
			line += fmt.Sprintf(", %d skipped", res.steps.Skipped)
		}
		if res.steps.Failed > 0 {
			line += fmt.Sprintf(", %d failed", res.steps.Failed)
		}
	}
	if s.Spend != nil {
		line += ", " + s.Spend.String()
	}
	color := progress.Green
	if res.code != ExitOK {
		color = progress.Red
	}
	t.display.Line(line, color)
	for _, h := range s.Handled {
		t.display.Line("  handled failure: "+h, "")
	}
	t.endOfJob(res, merge)
	switch {
	case res.status == state.Failed, res.status == state.Stopped:
		// The error, which names the phase, is the last line: what a
		// terminal or a CI log shows first.
		resume := "runner resume "
		var stopped *mapreduce.StoppedError
		switch {
		case errors.As(res.err, new(*workspace.MergeError)):
			resume += "--merge " // a final merge that failed is made again only when asked for
		case errors.As(res.err, &stopped) && stopped.Limit() == errorpolicy.LimitCost:
			resume += "--budget-usd N " // the same budget would stop it again
		}
		t.display.Line("resume with: "+resume+s.JobID, "")
		t.fileChanged(j)
		t.display.Line("runner: "+inPhase(res.err, s.Error), "")
	case res.status == state.Interrupted:
		t.fileChanged(j)
		t.display.Line(fmt.Sprintf("runner: %s; resume with: runner resume %s", s.Error, s.JobID), "")
	case res.items != nil && res.items.DLQ > 0:
		t.display.Line(fmt.Sprintf("inspect with: runner dlq list %s; re-run with: runner dlq retry %s", s.JobID, s.JobID), "")
	}
}
