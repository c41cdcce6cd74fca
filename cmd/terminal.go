package cmd

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/runnerdev/runner/retryv2"
	"github.com/runnerdev/runner/workflow"
	"github.com/runnerdev/runner/workflow/eventlog"
	"github.com/runnerdev/runner/workflow/state"
)

// terminal shows a running job to a person (text on stderr) or to a
// program (one JSON summary on stdout).
type terminal struct {
	g    *globalOptions
	json bool
	mu   sync.Mutex
}

func newTerminal(g *globalOptions, jsonOutput bool) *terminal {
	return &terminal{g: g, json: jsonOutput}
}

// commandStdout is where commands' own stdout goes: the terminal's stdout,
// or stderr when stdout carries the JSON document.
func (t *terminal) commandStdout() io.Writer {
	if t.json {
		return t.g.stderr
	}
	return t.g.stdout
}

func (t *terminal) printf(format string, args ...any) {
	t.mu.Lock()
	defer t.mu.Unlock()
	fmt.Fprintf(t.g.stderr, format, args...)
}

// event renders one event as a line, by verbosity.
func (t *terminal) event(e eventlog.Event) {
	if t.g.Quiet {
		return
	}
	step := e.Str("step")
	switch e.Type {
	case "step_started":
		t.printf("==> %s %s\n", step, e.Str("command"))
	case "step_skipped":
		t.printf("--- skipped %s (%s)\n", step, e.Str("reason"))
	case "step_failed":
		if h := e.Str("handled"); h != "" {
			t.printf("!!! %s (handled: %s)\n", e.Str("error"), h)
		} else {
			t.printf("!!! %s\n", e.Str("error"))
		}
	case "attempt_failed":
		if t.g.Verbose {
			t.printf("    attempt %v failed: %s\n", e.Fields["attempt"], e.Str("message"))
		}
	case "retry_decision":
		if e.Str("reason") != retryv2.ReasonCanceled { // the interrupt is reported on its own
			t.printf("    %s\n", retryLine(e))
		}
	case "circuit_opened", "circuit_half_open", "circuit_closed":
		t.printf("    circuit breaker of %s: %s\n", step, strings.TrimPrefix(e.Type, "circuit_"))
	default:
		if t.g.Verbose {
			line, _ := e.MarshalJSON()
			t.printf("    %s\n", line)
		}
	}
}

// retryLine renders a retry decision:
// "attempt 2/5 failed (exit 22, matched rate_limit); retrying in 2.1s".
func retryLine(e eventlog.Event) string {
	what := e.Str("kind")
	switch what {
	case "exit":
		what = fmt.Sprintf("exit %v", e.Fields["exit_code"])
	case "circuit_open":
		what = "circuit open"
	case "timeout":
		what = "timed out"
	}
	reason := e.Str("reason")
	attempt := fmt.Sprint(e.Fields["attempt"])
	if limit := fmt.Sprint(e.Fields["limit"]); limit != "0" && limit != "<nil>" {
		attempt += "/" + limit
	}
	if e.Str("action") != "retry" {
		return fmt.Sprintf("attempt %s failed (%s); giving up: %s", attempt, what, reason)
	}
	if reason != "matched any failure" {
		what += ", " + reason
	}
	delay := time.Duration(toInt64(e.Fields["delay_ms"])) * time.Millisecond
	if delay >= time.Second {
		delay = delay.Round(100 * time.Millisecond)
	}
	return fmt.Sprintf("attempt %s failed (%s); retrying in %s", attempt, what, delay)
}

// toInt64 reads a number field of an event (int64 when just emitted,
// json.Number when read back).
func toInt64(v any) int64 {
	switch n := v.(type) {
	case int64:
		return n
	case int:
		return int64(n)
	case json.Number:
		i, _ := n.Int64()
		return i
	case float64:
		return int64(n)
	}
	return 0
}

// runSummary is the machine-readable end of `runner run`.
type runSummary struct {
	JobID      string            `json:"job_id"`
	Workflow   string            `json:"workflow"`
	Status     string            `json:"status"`
	ExitCode   int               `json:"exit_code"`
	DurationMS int64             `json:"duration_ms"`
	Steps      *stepCounts       `json:"steps,omitempty"`
	Items      *state.ItemCounts `json:"items,omitempty"`
	Error      string            `json:"error,omitempty"`
	Handled    []string          `json:"handled_failures,omitempty"`
}

type stepCounts struct {
	Total     int `json:"total"`
	Succeeded int `json:"succeeded"`
	Failed    int `json:"failed"`
	Skipped   int `json:"skipped"`
}

// summary reports how a standard job ended.
func (t *terminal) summary(j *workflow.Job, status state.Status, code int, pr workflow.PhaseResult, err error) {
	s := runSummary{
		JobID: j.State.Meta.ID, Workflow: j.Workflow.Name, Status: string(status), ExitCode: code,
		DurationMS: j.Elapsed().Milliseconds(),
		Steps:      &stepCounts{Total: len(j.Workflow.Steps), Succeeded: pr.Succeeded, Failed: pr.Failed, Skipped: pr.Skipped},
	}
	if err != nil {
		s.Error = err.Error()
	}
	for _, h := range pr.Handled {
		s.Handled = append(s.Handled, h.Error())
	}
	if t.json {
		enc := json.NewEncoder(t.g.stdout)
		enc.SetIndent("", "  ")
		_ = enc.Encode(s)
		return
	}
	d := time.Duration(s.DurationMS) * time.Millisecond
	line := fmt.Sprintf("%s: %s in %s: %d/%d steps succeeded", status, j.State.Meta.ID, d, pr.Succeeded, s.Steps.Total)
	if pr.Skipped > 0 {
		line += fmt.Sprintf(", %d skipped", pr.Skipped)
	}
	if pr.Failed > 0 {
		line += fmt.Sprintf(", %d failed", pr.Failed)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	fmt.Fprintln(t.g.stderr, line)
	for _, h := range s.Handled {
		fmt.Fprintf(t.g.stderr, "  handled failure: %s\n", h)
	}
	switch status {
	case state.Failed:
		fmt.Fprintf(t.g.stderr, "runner: %s\n", s.Error)
		fmt.Fprintf(t.g.stderr, "resume with: runner resume %s\n", s.JobID)
	case state.Interrupted:
		fmt.Fprintf(t.g.stderr, "runner: %s; resume with: runner resume %s\n", s.Error, s.JobID)
	}
}
