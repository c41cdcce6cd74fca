package retryv2

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/expr-lang/expr"
)

// Built-in matchers, case-insensitive, compiled on first use. Status codes
// match as whole numbers only ("503", not "5030" or "5000ms").
var builtins = sync.OnceValue(func() map[MatcherKind]*regexp.Regexp {
	return map[MatcherKind]*regexp.Regexp{
		MatchNetwork: regexp.MustCompile(`(?i)network|connection (refused|reset|timed out)|unreachable|` +
			`could not resolve host|temporary failure in name resolution|no route to host|broken pipe`),
		MatchTimeout:     regexp.MustCompile(`(?i)timeout|timed out`),
		MatchServerError: regexp.MustCompile(`(?i)\b(500|502|503|504)\b|server error|bad gateway|service unavailable|gateway timeout`),
		MatchRateLimit:   regexp.MustCompile(`(?i)\b429\b|rate limit|too many requests|throttl`),
	}
})

// Match reports whether the matcher accepts the failure o.
func (m Matcher) Match(o Outcome) (bool, error) {
	switch m.Kind {
	case MatchTimeout:
		if o.TimedOut || o.Kind == KindTimeout || o.ExitCode == 124 {
			return true, nil
		}
		return builtins()[m.Kind].MatchString(o.text()), nil
	case MatchNetwork, MatchServerError, MatchRateLimit:
		return builtins()[m.Kind].MatchString(o.text()), nil
	case MatchPattern:
		return m.Pattern.MatchString(o.text()), nil
	case MatchExitCodes:
		return o.Kind == KindExit && slices.Contains(m.ExitCodes, o.ExitCode), nil
	case MatchWhen:
		v, err := expr.Run(m.When, OutcomeVars(o))
		if err != nil {
			msg, _, _ := strings.Cut(err.Error(), "\n") // expr adds a snippet of the source on more lines
			return false, fmt.Errorf("retry_on %s: %s", m.Source, msg)
		}
		b, ok := v.(bool)
		if !ok {
			return false, fmt.Errorf("retry_on %s: got %T, not a boolean", m.Source, v)
		}
		return b, nil
	}
	return false, fmt.Errorf("unknown matcher kind %q", m.Kind)
}

// OutcomeVars are the variables an expression over an attempt sees
// (retry_on when, repeat until).
func OutcomeVars(o Outcome) map[string]any {
	return map[string]any{
		"exit_code": o.ExitCode,
		"signal":    o.Signal,
		"timed_out": o.TimedOut,
		"kind":      o.Kind,
		"stdout":    o.Stdout,
		"stderr":    o.Stderr,
		"output":    strings.TrimRight(o.Stdout, " \t\r\n"),
		"duration":  o.Duration.Seconds(),
		"attempt":   o.Attempt,
	}
}

// accepts finds the first matcher of p that accepts o. With no matchers
// every failure is accepted (matcher ""). A matcher whose expression fails
// to evaluate does not accept; its error is returned with the result.
func (p Policy) accepts(o Outcome) (matcher string, ok bool, err error) {
	if len(p.RetryOn) == 0 {
		return "", true, nil
	}
	var errs []error
	for _, m := range p.RetryOn {
		hit, err := m.Match(o)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if hit {
			return m.Source, true, nil
		}
	}
	if len(errs) > 0 {
		return "", false, errs[0]
	}
	return "", false, nil
}
