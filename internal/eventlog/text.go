package eventlog

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/runnerdev/runner/internal/printable"
)

// AppendLine appends the event as a line of text, as `runner events`
// prints it: its local time, its type (padded to 18 characters) and what
// it means (Describe).
func (e Event) AppendLine(b []byte) []byte {
	b = e.Time.Local().AppendFormat(b, time.DateTime+".000")
	b = append(append(b, "  "...), e.Type...)
	for n := utf8.RuneCountInString(string(e.Type)); n < 18; n++ {
		b = append(b, ' ')
	}
	b = printable.AppendLine(append(b, ' '), e.Describe())
	return append(b, '\n')
}

// Describe says what the event means in a few words; types without a
// description show their fields as key=value. What a NATS worker did
// names it.
func (e Event) Describe() string {
	s := e.describe()
	if w := e.Str("worker"); w != "" && e.Type != TypeResultDuplicate && e.Type != TypeTaskRedelivered {
		s += " (worker " + w + ")"
	}
	return s
}

func (e Event) describe() string {
	who := e.Str("step")
	if e.ItemID != "" {
		who = "item " + e.ItemID
		if step := e.Str("step"); step != "" {
			who += " " + step
		}
	}
	n := func(name string) int64 { return e.Int(name) }
	ms := func(name string) time.Duration { return time.Duration(n(name)) * time.Millisecond }
	t := e.Type
	if JobEnded(t) {
		s := fmt.Sprintf("%s, exit %d, after %s", e.Str("status"), n("exit_code"), ms("duration_ms"))
		if err := e.Str("error"); err != "" {
			s += ": " + err
		}
		return s
	}
	switch t {
	case TypeJobStarted:
		return fmt.Sprintf("%s (%s) from %s, seed %v", e.Str("workflow"), e.Str("mode"), e.Str("file"), e.Fields["seed"])
	case TypeJobChanged:
		return e.changes()
	case TypeStepStarted:
		return who + ": " + e.Command()
	case TypeStepCompleted:
		return fmt.Sprintf("%s: exit %d in %s", who, n("exit_code"), ms("duration_ms"))
	case TypeStepFailed:
		return who + ": " + e.Str("error")
	case TypeStepSkipped:
		return who + ": " + e.Str("reason")
	case TypeAttemptStarted:
		return fmt.Sprintf("%s: attempt %d", who, n("attempt"))
	case TypeAttemptSucceeded:
		return fmt.Sprintf("%s: attempt %d succeeded in %s", who, n("attempt"), ms("duration_ms"))
	case TypeAttemptFailed:
		return fmt.Sprintf("%s: attempt %d failed (%s) after %s: %s", who, n("attempt"), e.failureKind(), ms("duration_ms"), e.Str("message"))
	case TypeRetryDecision:
		return who + ": " + e.RetryText()
	case TypeItemStarted:
		return fmt.Sprintf("%s: attempt %d", who, n("attempt"))
	case TypeResultDuplicate:
		return fmt.Sprintf("%s: attempt %d has a result; dropped another from worker %s (delivery %d, epoch %d)", who, n("attempt"), e.Str("worker"), n("delivery"), n("epoch"))
	case TypeTaskRedelivered:
		s := fmt.Sprintf("%s: attempt %d's task delivered again, to worker %s (delivery %d)", who, n("attempt"), e.Str("worker"), n("delivery"))
		if from := e.Str("from_worker"); from != "" {
			s += "; worker " + from + " had it"
		}
		return s
	case TypeNATSStreams:
		return "NATS streams: " + e.Str("replication")
	case TypeNATSUnavailable:
		return fmt.Sprintf("NATS stream %s unavailable: %s; waiting for it", e.Str("stream"), e.Str("message"))
	case TypeNATSRestored:
		return fmt.Sprintf("NATS streams answer again, after %s", ms("down_ms"))
	case TypeAgentUsage:
		return fmt.Sprintf("%s attempt %d: its agent spent %s", who, n("attempt"), e.usage())
	case TypeAgentProgress:
		return fmt.Sprintf("%s attempt %d: its agent has spent %s so far", who, n("attempt"), e.usage())
	case TypeItemSucceeded:
		return fmt.Sprintf("%s in %s", who, ms("duration_ms"))
	case TypeItemFailed:
		return fmt.Sprintf("%s (%s): %s", who, e.Str("action"), e.Str("message"))
	case TypeItemRetrying:
		return fmt.Sprintf("%s: attempt %d failed, again in %s: %s", who, n("attempt"), ms("delay_ms"), e.Str("message"))
	case TypeItemSkipped, TypeDLQAdded, TypeDLQRemoved, TypeReduceSkipped:
		return strings.TrimSpace(who + " " + e.Str("reason"))
	case TypeThresholdReached:
		return e.Str("rule") + ": " + e.Str("reason")
	case TypeBudgetReached:
		return e.budgetText()
	case TypeCircuitOpened, TypeCircuitHalfOpen, TypeCircuitClosed:
		return strings.TrimSpace(e.Str("scope") + " " + who)
	}
	keys := make([]string, 0, len(e.Fields))
	for k := range e.Fields {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		v, _ := json.Marshal(e.Fields[k])
		parts = append(parts, k+"="+string(v))
	}
	return strings.Join(parts, " ")
}

// budgetText words a budget_reached event: "budget.max_cost_usd $1.00
// reached: agents spent $1.31, 882k tokens; items running: 2".
func (e Event) budgetText() string {
	limit, max := e.Str("limit"), fmt.Sprint(e.Int("max"))
	if limit == "max_cost_usd" {
		max = CostText(e.Float("max"))
	}
	spent := AgentUsage{CostUSD: e.Float("cost_usd"), InputTokens: e.Int("tokens")}
	return fmt.Sprintf("budget.%s %s reached: agents spent %s; items running: %d", limit, max, spent, e.Int("running"))
}

// changes words a job_changed event: "runs deploy.yml now (the copy it
// replaces is kept as workflow.1.yml); set REGION".
func (e Event) changes() string {
	var parts []string
	if file := e.Str("file"); file != "" {
		parts = append(parts, fmt.Sprintf("runs %s now (the copy it replaces is kept as %s)", file, e.Str("kept")))
	}
	var names []string
	switch set := e.Fields["set"].(type) {
	case []string: // as written
		names = set
	case []any: // as read back
		for _, n := range set {
			names = append(names, fmt.Sprint(n))
		}
	}
	if len(names) > 0 {
		parts = append(parts, "set "+strings.Join(names, ", "))
	}
	if _, ok := e.Fields["budget_usd"]; ok {
		parts = append(parts, "budget "+CostText(e.Float("budget_usd")))
	}
	return strings.Join(parts, "; ")
}

// Command is a step_started event's command, a multi-line one by its
// first line.
func (e Event) Command() string {
	cmd := strings.TrimSpace(e.Str("command"))
	if first, _, more := strings.Cut(cmd, "\n"); more {
		return first + " …"
	}
	return cmd
}

// RetryText words a retry_decision event:
// "attempt 2/5 failed (exit 22, matched rate_limit); retrying in 2.1s".
func (e Event) RetryText() string {
	what := e.failureKind()
	reason := e.Str("reason")
	attempt := fmt.Sprint(e.Fields["attempt"])
	n, count, limit := e.Int("attempt"), e.Int("count"), e.Int("limit")
	if count == 0 {
		count = n // a log written before events carried the count
	}
	perPolicy := "" // list form: the handling policy's own count
	switch {
	case limit > 0 && count == n:
		attempt += fmt.Sprintf("/%d", limit)
	case limit > 0:
		perPolicy = fmt.Sprintf(" %d/%d", count, limit)
	}
	if e.Str("action") != "retry" {
		if m := e.Str("matcher"); perPolicy != "" && m != "" {
			what += ", matched " + m + perPolicy
		}
		return fmt.Sprintf("attempt %s failed (%s); giving up: %s", attempt, what, reason)
	}
	if reason != "matched any failure" {
		what += ", " + reason + perPolicy
	}
	delay := time.Duration(e.Int("delay_ms")) * time.Millisecond
	if delay >= time.Second {
		delay = delay.Round(100 * time.Millisecond)
	}
	return fmt.Sprintf("attempt %s failed (%s); retrying in %s", attempt, what, delay)
}

// failureKind words the event's failure kind: "exit 22", "timed out".
func (e Event) failureKind() string {
	switch kind := e.Str("kind"); kind {
	case "exit":
		return fmt.Sprintf("exit %v", e.Fields["exit_code"])
	case "circuit_open":
		return "circuit open"
	case "timeout":
		return "timed out"
	default:
		return kind
	}
}

// String is what u spent as runner shows it: "$0.19, 126k tokens".
func (u AgentUsage) String() string {
	return CostText(u.CostUSD) + ", " + countText(u.Tokens()) + " tokens"
}

// CostText is a cost in USD to the cent ("$0.19"), or to the
// hundredth of a cent below one cent ("$0.0031").
func CostText(usd float64) string {
	if usd > 0 && usd < 0.01 {
		return fmt.Sprintf("$%.4f", usd)
	}
	return fmt.Sprintf("$%.2f", usd)
}

// countText is a count in three digits or fewer: 987, 126k, 1.3M.
func countText(n int64) string {
	switch {
	case n < 1000:
		return strconv.FormatInt(n, 10)
	case n < 999_500:
		return fmt.Sprintf("%.0fk", float64(n)/1e3)
	}
	return fmt.Sprintf("%.1fM", float64(n)/1e6)
}
