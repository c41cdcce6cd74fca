package retryv2

import (
	"context"
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/expr-lang/expr"
)

// declaredConstants returns the values of the constants of the named type
// declared in this package's source, so that a constant added without
// joining its list fails the tests below.
func declaredConstants(t *testing.T, typeName string) []string {
	t.Helper()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	var values []string
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		f, err := parser.ParseFile(fset, name, src, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, decl := range f.Decls {
			gen, ok := decl.(*ast.GenDecl)
			if !ok || gen.Tok != token.CONST {
				continue
			}
			for _, spec := range gen.Specs {
				vs := spec.(*ast.ValueSpec)
				if id, ok := vs.Type.(*ast.Ident); !ok || id.Name != typeName {
					continue
				}
				for _, v := range vs.Values {
					s, err := strconv.Unquote(v.(*ast.BasicLit).Value)
					if err != nil {
						t.Fatal(err)
					}
					values = append(values, s)
				}
			}
		}
	}
	return values
}

func TestEveryKindConstantIsListed(t *testing.T) {
	for typeName, listed := range map[string]string{
		"Strategy":    oneOf(slices.Sorted(slices.Values(Strategies))),
		"JitterMode":  oneOf(slices.Sorted(slices.Values(JitterModes))),
		"MatcherKind": oneOf(slices.Sorted(slices.Values(MatcherKinds))),
	} {
		if declared := oneOf(slices.Sorted(slices.Values(declaredConstants(t, typeName)))); declared != listed {
			t.Errorf("%s constants %s, but its list holds %s", typeName, declared, listed)
		}
	}
}

// Every strategy has its own case in Delay: an unknown one waits MaxDelay
// (an hour here), which matches none of these.
func TestEveryStrategyHasItsDocumentedDelays(t *testing.T) {
	sec := time.Second
	documented := map[Strategy][]time.Duration{ // SPEC §3.2, initial_delay 1s
		Fixed:       {sec, sec, sec, sec, sec},
		Linear:      {sec, 2 * sec, 3 * sec, 4 * sec, 5 * sec},
		Exponential: {sec, 2 * sec, 4 * sec, 8 * sec, 16 * sec},
		Fibonacci:   {sec, sec, 2 * sec, 3 * sec, 5 * sec},
		Custom:      {sec, 5 * sec, 30 * sec, time.Hour, time.Hour},
	}
	for _, s := range Strategies {
		want, ok := documented[s]
		if !ok {
			t.Errorf("strategy %q: no documented delays in this test", s)
			continue
		}
		p := policy(s, func(p *Policy) {
			p.MaxDelay = time.Hour
			p.Backoff.Delays = []time.Duration{sec, 5 * sec, 30 * sec}
		})
		var got []time.Duration
		for k := 1; k <= len(want); k++ {
			got = append(got, p.Delay(k, nil))
		}
		if !slices.Equal(got, want) {
			t.Errorf("strategy %q: delays %v, want %v", s, got, want)
		}
	}
}

// Every jitter mode has its own case in Delay, seen at the low end of its
// range (rnd = 0) around a 10s delay with jitter_factor 0.5.
func TestEveryJitterModeHasItsDocumentedRange(t *testing.T) {
	documented := map[JitterMode]time.Duration{
		NoJitter:           10 * time.Second,
		ProportionalJitter: 7500 * time.Millisecond,
		FullJitter:         0,
	}
	for _, mode := range JitterModes {
		want, ok := documented[mode]
		if !ok {
			t.Errorf("jitter mode %q: no documented delay in this test", mode)
			continue
		}
		p := policy(Fixed, func(p *Policy) { p.InitialDelay, p.Jitter, p.JitterFactor = 10*time.Second, mode, 0.5 })
		if got := p.Delay(1, func() float64 { return 0 }); got != want {
			t.Errorf("jitter mode %q: Delay = %v, want %v", mode, got, want)
		}
	}
}

// Every matcher kind has its own case in Match.
func TestEveryMatcherKindMatches(t *testing.T) {
	when, err := expr.Compile("exit_code == 75")
	if err != nil {
		t.Fatal(err)
	}
	matchers := map[MatcherKind]Matcher{
		MatchNetwork:     {Kind: MatchNetwork},
		MatchTimeout:     {Kind: MatchTimeout},
		MatchServerError: {Kind: MatchServerError},
		MatchRateLimit:   {Kind: MatchRateLimit},
		MatchPattern:     {Kind: MatchPattern, Pattern: regexp.MustCompile(`try again`)},
		MatchExitCodes:   {Kind: MatchExitCodes, ExitCodes: []int{75}},
		MatchWhen:        {Kind: MatchWhen, When: when},
	}
	failure := Outcome{Kind: KindExit, ExitCode: 75, Err: errors.New("exit status 75"),
		Stderr: "network unreachable, timed out, 503, 429: try again\n"}
	for _, kind := range MatcherKinds {
		m, ok := matchers[kind]
		if !ok {
			t.Errorf("matcher kind %q: no example in this test", kind)
			continue
		}
		if hit, err := m.Match(failure); !hit || err != nil {
			t.Errorf("matcher kind %q: Match = %v, %v; want true, nil", kind, hit, err)
		}
	}
}

func TestValidateRefusesUnknownKinds(t *testing.T) {
	tests := []struct {
		name string
		mod  func(*Policy)
		want string
	}{
		{"strategy", func(p *Policy) { p.Backoff.Strategy = "exponentail" },
			`unknown backoff strategy "exponentail" (want one of "fixed", "linear", "exponential", "fibonacci", "custom")`},
		{"empty strategy", func(p *Policy) { p.Backoff.Strategy = "" }, `unknown backoff strategy ""`},
		{"jitter", func(p *Policy) { p.Jitter = "true" }, `unknown jitter mode "true" (want one of "", "proportional", "full")`},
		{"matcher", func(p *Policy) { p.RetryOn = []Matcher{{Kind: MatchNetwork}, {Kind: "netwrok"}} }, `unknown matcher kind "netwrok"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := policy(Exponential, tt.mod)
			if err := p.Validate(); err == nil || !strings.HasPrefix(err.Error(), tt.want) {
				t.Errorf("Validate = %v, want %s", err, tt.want)
			}
		})
	}
	if err := DefaultPolicy().Validate(); err != nil {
		t.Errorf("DefaultPolicy().Validate() = %v", err)
	}
}

// An unknown strategy is not exponential backoff in disguise.
func TestUnknownStrategyWaitsMaxDelay(t *testing.T) {
	p := policy("exponentail", nil)
	if got := p.Delay(1, nil); got != p.MaxDelay {
		t.Errorf("Delay(1) = %v, want max_delay %v", got, p.MaxDelay)
	}
}

func TestRunRefusesAnInvalidPolicyBeforeAnyAttempt(t *testing.T) {
	ran := false
	_, err := Run(t.Context(), Spec{Policies: []Policy{DefaultPolicy(), policy("exponentail", nil)}},
		func(ctx context.Context, n int) Outcome { ran = true; return Outcome{} })
	if want := `retry policy 2: unknown backoff strategy "exponentail"`; err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("Run = %v, want %s...", err, want)
	}
	if ran {
		t.Error("the attempt ran")
	}
}
