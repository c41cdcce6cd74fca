package retryv2

import (
	"strings"
	"time"
)

// Failure kinds of an attempt.
const (
	KindExit        = "exit"
	KindSignal      = "signal"
	KindTimeout     = "timeout"
	KindSpawn       = "spawn"
	KindCircuitOpen = "circuit_open"
	KindCanceled    = "canceled"
	KindNoCommit    = "no_commit"   // the command succeeded without the commit commit_required asks for
	KindAgentError  = "agent_error" // the agent ended its session with an error (Claude Code's is_error)
)

// Outcome is what one attempt did. Kind is "" for a success.
type Outcome struct {
	Attempt  int
	Kind     string
	ExitCode int
	Signal   string
	TimedOut bool
	Stdout   string // last 64 KiB
	Stderr   string // last 64 KiB
	Duration time.Duration
	Err      error // the failure as runner describes it, e.g. "exit status 22"

	RetryAfter *time.Duration // what the command wrote to $RUNNER_RETRY_AFTER_FILE
}

// Failed reports whether the attempt failed.
func (o Outcome) Failed() bool { return o.Kind != "" }

// Message is the failure on one line: runner's description followed by the
// last line the command wrote to stderr (or stdout when stderr is empty).
func (o Outcome) Message() string {
	if !o.Failed() {
		return ""
	}
	msg := "failed"
	if o.Err != nil {
		msg = o.Err.Error()
	}
	last := lastLine(o.Stderr)
	if last == "" {
		last = lastLine(o.Stdout)
	}
	if last != "" && !strings.Contains(msg, last) {
		msg += ": " + last
	}
	return msg
}

// text is what matchers search: runner's message, then stderr and stdout.
func (o Outcome) text() string {
	var b strings.Builder
	if o.Err != nil {
		b.WriteString(o.Err.Error())
	}
	b.WriteByte('\n')
	b.WriteString(o.Stderr)
	b.WriteByte('\n')
	b.WriteString(o.Stdout)
	return b.String()
}

func lastLine(s string) string {
	s = strings.TrimRight(s, " \t\r\n")
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	s = strings.TrimSpace(s)
	const max = 300
	if len(s) > max {
		s = s[:max] + "…"
	}
	return s
}
