package retryv2

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/expr-lang/expr/vm"
)

// Strategy names a backoff curve.
type Strategy string

// The five backoff strategies of the workflow format.
const (
	Fixed       Strategy = "fixed"
	Linear      Strategy = "linear"
	Exponential Strategy = "exponential"
	Fibonacci   Strategy = "fibonacci"
	Custom      Strategy = "custom"
)

// Strategies lists every Strategy, in the order the documentation gives
// them. The parser accepts exactly these names, the schema lists them, and
// Delay has a case for each: tests hold all three to this list.
var Strategies = []Strategy{Fixed, Linear, Exponential, Fibonacci, Custom}

// Backoff is a strategy with its parameters.
type Backoff struct {
	Strategy  Strategy
	Base      float64         // exponential: multiplier per failure (default 2)
	Increment time.Duration   // linear: added per failure (default: the initial delay)
	Delays    []time.Duration // custom: delay after the k-th failure
}

// JitterMode says how a computed delay is randomised.
type JitterMode string

// Jitter modes: none, ±(delay·factor)/2, or uniform in [0, delay].
const (
	NoJitter           JitterMode = ""
	ProportionalJitter JitterMode = "proportional"
	FullJitter         JitterMode = "full"
)

// JitterModes lists every JitterMode.
var JitterModes = []JitterMode{NoJitter, ProportionalJitter, FullJitter}

// Defaults of a retry_config that leaves a field out.
const (
	DefaultAttempts     = 3
	DefaultInitialDelay = time.Second
	DefaultMaxDelay     = 30 * time.Second
	DefaultJitterFactor = 0.3
	DefaultBase         = 2.0
)

// Policy is one retry policy: how many runs, how long between them, and
// which failures it handles.
type Policy struct {
	Attempts     int // total runs including the first; >= 1
	Backoff      Backoff
	InitialDelay time.Duration
	MaxDelay     time.Duration
	Jitter       JitterMode
	JitterFactor float64
	RetryOn      []Matcher     // empty: every failure is retried
	Budget       time.Duration // 0: unbounded; bounds attempts and delays together
	RetryAfter   bool          // honour delays requested by the command
}

// DefaultPolicy is a retry_config with every field left out.
func DefaultPolicy() Policy {
	return Policy{
		Attempts:     DefaultAttempts,
		Backoff:      Backoff{Strategy: Exponential, Base: DefaultBase},
		InitialDelay: DefaultInitialDelay,
		MaxDelay:     DefaultMaxDelay,
		JitterFactor: DefaultJitterFactor,
	}
}

// MatcherKind names a matcher form.
type MatcherKind string

// Matcher kinds of retry_on.
const (
	MatchNetwork     MatcherKind = "network"
	MatchTimeout     MatcherKind = "timeout"
	MatchServerError MatcherKind = "server_error"
	MatchRateLimit   MatcherKind = "rate_limit"
	MatchPattern     MatcherKind = "pattern"
	MatchExitCodes   MatcherKind = "exit_codes"
	MatchWhen        MatcherKind = "when"
)

// BuiltinMatchers are the matcher kinds written as a bare name in retry_on;
// the others take a value ({pattern: RE}, {exit_codes: [..]}, {when: EXPR}).
var BuiltinMatchers = []MatcherKind{MatchNetwork, MatchTimeout, MatchServerError, MatchRateLimit}

// MatcherKinds lists every MatcherKind.
var MatcherKinds = append(slices.Clip(BuiltinMatchers), MatchPattern, MatchExitCodes, MatchWhen)

// Matcher accepts or rejects a failure for retrying.
type Matcher struct {
	Kind      MatcherKind
	Pattern   *regexp.Regexp // MatchPattern
	ExitCodes []int          // MatchExitCodes
	When      *vm.Program    // MatchWhen, compiled at validation
	Source    string         // as written, for events and messages
}

// Validate reports a policy whose strategy, jitter mode or matcher kind is
// not one of this package's. The parser builds only valid policies; Run
// checks the ones built in code, so that a misspelt kind is an error
// instead of a quiet fallback to some other schedule.
func (p Policy) Validate() error {
	if !slices.Contains(Strategies, p.Backoff.Strategy) {
		return fmt.Errorf("unknown backoff strategy %q (want one of %s)", p.Backoff.Strategy, oneOf(Strategies))
	}
	if !slices.Contains(JitterModes, p.Jitter) {
		return fmt.Errorf("unknown jitter mode %q (want one of %s)", p.Jitter, oneOf(JitterModes))
	}
	for _, m := range p.RetryOn {
		if !slices.Contains(MatcherKinds, m.Kind) {
			return fmt.Errorf("unknown matcher kind %q (want one of %s)", m.Kind, oneOf(MatcherKinds))
		}
	}
	return nil
}

// oneOf lists names for an error message: `"fixed", "linear", "custom"`.
func oneOf[S ~string](names []S) string {
	quoted := make([]string, len(names))
	for i, n := range names {
		quoted[i] = fmt.Sprintf("%q", n)
	}
	return strings.Join(quoted, ", ")
}
