package retryv2

import (
	"context"
	"errors"
	"regexp"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/expr-lang/expr"

	"github.com/runnerdev/runner/internal/breaker"
)

// script returns an AttemptFunc whose n-th attempt yields outcomes[n-1]
// (the last one repeats), recording the fake time of each start.
func script(starts *[]time.Duration, t0 time.Time, outcomes ...Outcome) AttemptFunc {
	return func(ctx context.Context, n int) Outcome {
		*starts = append(*starts, time.Since(t0))
		o := outcomes[min(n, len(outcomes))-1]
		o.Attempt = n
		return o
	}
}

var (
	fail503 = Outcome{Kind: KindExit, ExitCode: 22, Err: errors.New("exit status 22"), Stderr: "curl: (22) The requested URL returned error: 503\n"}
	fail1   = Outcome{Kind: KindExit, ExitCode: 1, Err: errors.New("exit status 1"), Stderr: "no such file\n"}
	ok      = Outcome{}
)

func TestRunExactFakeTimeSchedule(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := DefaultPolicy()
		p.Attempts = 4
		var starts []time.Duration
		var decisions []Decision
		last, err := Run(t.Context(), Spec{Policies: []Policy{p}, Decided: func(d Decision) { decisions = append(decisions, d) }},
			script(&starts, time.Now(), fail503, fail503, fail503, ok))
		if err != nil || last.Attempt != 4 {
			t.Fatalf("Run = %+v, %v", last, err)
		}
		want := []time.Duration{0, time.Second, 3 * time.Second, 7 * time.Second}
		if !slices.Equal(starts, want) {
			t.Errorf("attempt starts %v, want %v", starts, want)
		}
		if len(decisions) != 3 || decisions[2].Delay != 4*time.Second || decisions[0].Action != "retry" {
			t.Errorf("decisions %+v", decisions)
		}
	})
}

func TestRunAttemptsExhaustedCarriesLastFailure(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := DefaultPolicy()
		var starts []time.Duration
		_, err := Run(t.Context(), Spec{Policies: []Policy{p}}, script(&starts, time.Now(), fail503))
		var e *Error
		if !errors.As(err, &e) || e.Reason != ReasonExhausted || e.Attempts != 3 {
			t.Fatalf("err = %v", err)
		}
		want := "failed after 3 attempts (attempts exhausted): exit status 22: curl: (22) The requested URL returned error: 503"
		if err.Error() != want {
			t.Errorf("err = %q\nwant  %q", err, want)
		}
	})
}

func TestRunNotRetryableStopsAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := DefaultPolicy()
		p.RetryOn = []Matcher{{Kind: MatchServerError, Source: "server_error"}}
		var starts []time.Duration
		_, err := Run(t.Context(), Spec{Policies: []Policy{p}}, script(&starts, time.Now(), fail1))
		var e *Error
		if !errors.As(err, &e) || e.Reason != ReasonNotRetryable || len(starts) != 1 {
			t.Fatalf("err = %v after %d attempts", err, len(starts))
		}
	})
}

func TestRunDisabledAndNoPolicies(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var starts []time.Duration
		var decisions []Decision
		decided := func(d Decision) { decisions = append(decisions, d) }
		_, err := Run(t.Context(), Spec{Policies: []Policy{DefaultPolicy()}, Disabled: true, Decided: decided}, script(&starts, time.Now(), fail1))
		if !strings.Contains(err.Error(), ReasonDisabled) || len(starts) != 1 || len(decisions) != 1 || decisions[0].Reason != ReasonDisabled {
			t.Errorf("disabled: %v after %d, decisions %+v", err, len(starts), decisions)
		}
		starts, decisions = nil, nil
		_, err = Run(t.Context(), Spec{Decided: decided}, script(&starts, time.Now(), fail1))
		if !strings.Contains(err.Error(), "failed after 1 attempt (not retryable)") || len(starts) != 1 {
			t.Errorf("no policies: %v after %d", err, len(starts))
		}
		if len(decisions) != 0 {
			t.Errorf("no policies made decisions %+v", decisions)
		}
	})
}

func TestRunListFormFirstMatchWinsWithOwnCounters(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		network := DefaultPolicy()
		network.Attempts, network.Backoff = 3, Backoff{Strategy: Fixed}
		network.RetryOn = []Matcher{{Kind: MatchNetwork, Source: "network"}}
		codes := DefaultPolicy()
		codes.Attempts, codes.Backoff, codes.InitialDelay = 2, Backoff{Strategy: Fixed}, 10*time.Second
		codes.RetryOn = []Matcher{{Kind: MatchExitCodes, ExitCodes: []int{75}, Source: "exit_codes"}}
		netFail := Outcome{Kind: KindExit, ExitCode: 7, Err: errors.New("exit status 7"), Stderr: "connection refused"}
		tempFail := Outcome{Kind: KindExit, ExitCode: 75, Err: errors.New("exit status 75")}
		var starts []time.Duration
		var decisions []Decision
		_, err := Run(t.Context(), Spec{Policies: []Policy{network, codes}, Decided: func(d Decision) { decisions = append(decisions, d) }},
			script(&starts, time.Now(), netFail, tempFail, netFail, tempFail))
		// net(1/3) retry 1s, temp(1/2) retry 10s, net(2/3) retry 1s, temp(2/2) stop.
		want := []time.Duration{0, time.Second, 11 * time.Second, 12 * time.Second}
		if !slices.Equal(starts, want) {
			t.Errorf("starts %v, want %v", starts, want)
		}
		if len(decisions) != 4 || decisions[3].Policy != 1 || decisions[3].Reason != ReasonExhausted || decisions[0].Matcher != "network" {
			t.Errorf("decisions %+v", decisions)
		}
		if err == nil {
			t.Fatal("want failure")
		}
	})
}

func TestRunBudgetGivesUpBeforeSleepingPastIt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := DefaultPolicy()
		p.Attempts, p.Budget = 10, 5*time.Second // delays 1s, 2s, then 4s would end at 7s
		var starts []time.Duration
		t0 := time.Now()
		_, err := Run(t.Context(), Spec{Policies: []Policy{p}}, script(&starts, t0, fail503))
		var e *Error
		if !errors.As(err, &e) || e.Reason != ReasonBudget || e.Attempts != 3 {
			t.Fatalf("err = %v", err)
		}
		if elapsed := time.Since(t0); elapsed != 3*time.Second {
			t.Errorf("gave up after %v, want 3s (no sleep into a certain failure)", elapsed)
		}
	})
}

func TestRunBudgetKillsRunningAttempt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := DefaultPolicy()
		p.Budget = 2 * time.Second
		_, err := Run(t.Context(), Spec{Policies: []Policy{p}}, func(ctx context.Context, n int) Outcome {
			<-ctx.Done() // a command that runs until killed
			return Outcome{Attempt: n, Kind: KindCanceled, Err: context.Cause(ctx)}
		})
		var e *Error
		if !errors.As(err, &e) || e.Reason != ReasonBudget || !errors.Is(e.Last.Err, ErrBudgetExhausted) {
			t.Fatalf("err = %v", err)
		}
	})
}

func TestRunCancelIsNotExhaustion(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cause := errors.New("interrupted by SIGINT")
		ctx, cancel := context.WithCancelCause(t.Context())
		p := DefaultPolicy()
		p.Attempts = 100
		go func() { time.Sleep(1500 * time.Millisecond); cancel(cause) }()
		var starts []time.Duration
		_, err := Run(ctx, Spec{Policies: []Policy{p}}, script(&starts, time.Now(), fail503))
		if !errors.Is(err, cause) {
			t.Fatalf("err = %v, want the cancel cause", err)
		}
		if len(starts) != 2 {
			t.Errorf("%d attempts, want 2 (canceled during the second delay)", len(starts))
		}
	})
}

func TestRunRetryAfterReplacesDelay(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := DefaultPolicy()
		p.RetryAfter, p.MaxDelay = true, time.Second // not capped by max_delay
		asked := Outcome{Kind: KindExit, ExitCode: 1, Err: errors.New("exit status 1"), Stdout: "HTTP/1.1 429\nRetry-After: 7\n"}
		var starts []time.Duration
		Run(t.Context(), Spec{Policies: []Policy{p}}, script(&starts, time.Now(), asked, ok))
		if !slices.Equal(starts, []time.Duration{0, 7 * time.Second}) {
			t.Errorf("starts %v, want [0 7s]", starts)
		}
		file := 3 * time.Second
		viaFile := Outcome{Kind: KindExit, ExitCode: 1, Err: errors.New("exit status 1"), RetryAfter: &file}
		starts = nil
		Run(t.Context(), Spec{Policies: []Policy{p}}, script(&starts, time.Now(), viaFile, ok))
		if !slices.Equal(starts, []time.Duration{0, 3 * time.Second}) {
			t.Errorf("file: starts %v, want [0 3s]", starts)
		}
		p.Budget = 5 * time.Second
		long := 60 * time.Second
		starts = nil
		_, err := Run(t.Context(), Spec{Policies: []Policy{p}}, script(&starts, time.Now(), Outcome{Kind: KindExit, Err: errors.New("x"), RetryAfter: &long}))
		if !strings.Contains(err.Error(), ReasonBudget) || len(starts) != 1 {
			t.Errorf("retry-after past budget: %v after %d", err, len(starts))
		}
	})
}

func TestBreakerOpensAndRefusesWithoutRunning(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var transitions []string
		b := breaker.New("fetch", breaker.Config{FailureThreshold: 2, SuccessThreshold: 1, Timeout: 30 * time.Second, HalfOpenRequests: 1},
			func(to string) { transitions = append(transitions, to) })
		p := DefaultPolicy()
		p.Attempts, p.Backoff = 4, Backoff{Strategy: Fixed}
		runs := 0
		_, err := Run(t.Context(), Spec{Policies: []Policy{p}, Breaker: b}, func(ctx context.Context, n int) Outcome {
			runs++
			o := fail503
			o.Attempt = n
			return o
		})
		if runs != 2 {
			t.Errorf("command ran %d times, want 2 (then the breaker refuses)", runs)
		}
		var e *Error
		if !errors.As(err, &e) || e.Reason != ReasonCircuitOpen || e.Last.Kind != KindCircuitOpen {
			t.Errorf("err = %v", err)
		}
		time.Sleep(31 * time.Second)
		Run(t.Context(), Spec{Breaker: b}, func(ctx context.Context, n int) Outcome { return ok })
		if strings.Join(transitions, ",") != "open,half_open,closed" || b.State() != "closed" {
			t.Errorf("transitions %v, state %s", transitions, b.State())
		}
	})
}

func TestMatchers(t *testing.T) {
	out := func(kind string, code int, text string) Outcome {
		return Outcome{Kind: kind, ExitCode: code, Err: errors.New("exit status " + text[:0]), Stderr: text}
	}
	tests := []struct {
		m    Matcher
		o    Outcome
		want bool
	}{
		{Matcher{Kind: MatchNetwork}, out(KindExit, 7, "curl: (7) Failed to connect: Connection refused"), true},
		{Matcher{Kind: MatchNetwork}, out(KindExit, 6, "Could not resolve host: example.invalid"), true},
		{Matcher{Kind: MatchNetwork}, out(KindExit, 1, "write: Broken pipe"), true},
		{Matcher{Kind: MatchNetwork}, out(KindExit, 1, "syntax error"), false},
		{Matcher{Kind: MatchTimeout}, Outcome{Kind: KindTimeout, TimedOut: true}, true},
		{Matcher{Kind: MatchTimeout}, out(KindExit, 124, ""), true},
		{Matcher{Kind: MatchTimeout}, out(KindExit, 1, "operation timed out"), true},
		{Matcher{Kind: MatchTimeout}, out(KindExit, 1, "done"), false},
		{Matcher{Kind: MatchServerError}, out(KindExit, 22, "returned error: 503"), true},
		{Matcher{Kind: MatchServerError}, out(KindExit, 1, "took 5000ms"), false},
		{Matcher{Kind: MatchServerError}, out(KindExit, 1, "port 5030"), false},
		{Matcher{Kind: MatchServerError}, out(KindExit, 1, "502 Bad Gateway"), true},
		{Matcher{Kind: MatchServerError}, out(KindExit, 1, "Service Unavailable"), true},
		{Matcher{Kind: MatchRateLimit}, out(KindExit, 1, "HTTP 429"), true},
		{Matcher{Kind: MatchRateLimit}, out(KindExit, 1, "id 14290"), false},
		{Matcher{Kind: MatchRateLimit}, out(KindExit, 1, "request throttled"), true},
		{Matcher{Kind: MatchRateLimit}, out(KindExit, 1, "Too Many Requests"), true},
		{Matcher{Kind: MatchPattern, Pattern: regexp.MustCompile(`lock held`)}, out(KindExit, 1, "db: lock held by 12"), true},
		{Matcher{Kind: MatchPattern, Pattern: regexp.MustCompile(`lock held`)}, out(KindExit, 1, "LOCK HELD"), false},
		{Matcher{Kind: MatchExitCodes, ExitCodes: []int{75, 111}}, out(KindExit, 111, ""), true},
		{Matcher{Kind: MatchExitCodes, ExitCodes: []int{75, 111}}, out(KindExit, 1, ""), false},
	}
	for _, tt := range tests {
		t.Run(string(tt.m.Kind)+"/"+tt.o.Stderr, func(t *testing.T) {
			got, err := tt.m.Match(tt.o)
			if err != nil || got != tt.want {
				t.Errorf("Match = %v, %v; want %v", got, err, tt.want)
			}
		})
	}
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	for in, want := range map[string]time.Duration{
		"5":                              5 * time.Second,
		"1.5":                            1500 * time.Millisecond,
		"Sun, 22 Nov 2026 10:00:30 GMT":  30 * time.Second,
		"Sun, 22 Nov 2026 09:00:00 GMT":  0,
		"Sunday, 22-Nov-26 10:00:10 GMT": 10 * time.Second,
		"Sun Nov 22 10:01:00 2026":       time.Minute,
	} {
		if got, ok := ParseRetryAfter(in, now); !ok || got != want {
			t.Errorf("ParseRetryAfter(%q) = %v, %v; want %v", in, got, ok, want)
		}
	}
	for _, bad := range []string{"", "soon", "-1"} {
		if _, ok := ParseRetryAfter(bad, now); ok {
			t.Errorf("ParseRetryAfter(%q) accepted", bad)
		}
	}
}

// recordingSlot is a Slot that logs its transitions with the fake time.
type recordingSlot struct {
	t0   time.Time
	held bool
	busy bool // no slot is free under a budget (a context with a deadline)
	log  []string
}

func (s *recordingSlot) Acquire(ctx context.Context) error {
	if _, budget := ctx.Deadline(); budget && s.busy {
		<-ctx.Done()
		return context.Cause(ctx)
	}
	if !s.held {
		s.held = true
		s.log = append(s.log, "acquire@"+time.Since(s.t0).String())
	}
	return nil
}

func (s *recordingSlot) Release() {
	if s.held {
		s.held = false
		s.log = append(s.log, "release@"+time.Since(s.t0).String())
	}
}

// Pause (repeat intervals, item-level retry delays) gives the slot back
// while it waits and holds it again afterwards; a zero pause keeps it.
func TestPauseGivesTheSlotBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		slot := &recordingSlot{t0: time.Now(), held: true}
		if err := Pause(t.Context(), time.Second, slot); err != nil {
			t.Fatal(err)
		}
		if err := Pause(t.Context(), 0, slot); err != nil {
			t.Fatal(err)
		}
		if want := []string{"release@0s", "acquire@1s"}; !slices.Equal(slot.log, want) || !slot.held {
			t.Errorf("slot log %v, held %v; want %v, held", slot.log, slot.held, want)
		}
	})
}

func TestRunGivesTheSlotBackDuringDelays(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		slot := &recordingSlot{t0: time.Now(), held: true}
		held := []bool{}
		p := DefaultPolicy()
		_, err := Run(t.Context(), Spec{Policies: []Policy{p}, Slot: slot}, func(ctx context.Context, n int) Outcome {
			held = append(held, slot.held)
			return Outcome{Attempt: n, Kind: KindExit, ExitCode: 1, Err: errors.New("exit status 1")}
		})
		if err == nil {
			t.Fatal("want failure")
		}
		want := []string{"release@0s", "acquire@1s", "release@1s", "acquire@3s"}
		if !slices.Equal(slot.log, want) {
			t.Errorf("slot log %v, want %v", slot.log, want)
		}
		if !slices.Equal(held, []bool{true, true, true}) || !slot.held {
			t.Errorf("held during attempts %v, at the end %v; want all true", held, slot.held)
		}
	})
}

// When the budget ends while the loop waits for a slot, Run reports the
// budget and the caller holds the slot again afterwards.
func TestRunTakesTheSlotBackWhenTheBudgetEndsWaitingForIt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		slot := &recordingSlot{t0: time.Now(), held: true, busy: true}
		p := DefaultPolicy()
		p.Budget = 10 * time.Second
		var starts []time.Duration
		_, err := Run(t.Context(), Spec{Policies: []Policy{p}, Slot: slot}, script(&starts, time.Now(), fail503))
		var e *Error
		if !errors.As(err, &e) || e.Reason != ReasonBudget || len(starts) != 1 {
			t.Errorf("err %v after %d attempts", err, len(starts))
		}
		if !slot.held || time.Since(slot.t0) != 10*time.Second {
			t.Errorf("slot held %v at %v (log %v); want held at the budget's end", slot.held, time.Since(slot.t0), slot.log)
		}
	})
}

// An attempt killed by a deadline (retry_budget here, agent_timeout in a
// map agent) counts as a failure in the step's breaker; one stopped by an
// interrupt of the job counts neither way.
func TestBreakerCountsKillsNotInterrupts(t *testing.T) {
	killed := func(ctx context.Context, n int) Outcome {
		<-ctx.Done()
		return Outcome{Attempt: n, Kind: KindCanceled, ExitCode: -1, Err: context.Cause(ctx)}
	}
	synctest.Test(t, func(t *testing.T) {
		b := breaker.New("x", breaker.Config{FailureThreshold: 1, SuccessThreshold: 1, Timeout: time.Minute, HalfOpenRequests: 1}, nil)
		p := DefaultPolicy()
		p.Budget = time.Second
		Run(t.Context(), Spec{Policies: []Policy{p}, Breaker: b}, killed)
		if b.State() != "open" {
			t.Errorf("state %s after an attempt the retry budget killed, want open", b.State())
		}
	})
	synctest.Test(t, func(t *testing.T) {
		b := breaker.New("x", breaker.Config{FailureThreshold: 1, SuccessThreshold: 1, Timeout: time.Minute, HalfOpenRequests: 1}, nil)
		ctx, cancel := context.WithCancelCause(t.Context())
		time.AfterFunc(time.Second, func() { cancel(errors.New("interrupted by SIGINT")) })
		Run(ctx, Spec{Breaker: b}, killed)
		if b.State() != "closed" {
			t.Errorf("state %s after an interrupted attempt, want closed", b.State())
		}
	})
}

// A retry_on when that fails at run time does not accept the failure, and
// the decision and the final error say why, on one line.
func TestWhenErrorIsTheReason(t *testing.T) {
	prog, err := expr.Compile("int(output) > 2")
	if err != nil {
		t.Fatal(err)
	}
	p := DefaultPolicy()
	p.RetryOn = []Matcher{{Kind: MatchWhen, When: prog, Source: `when "int(output) > 2"`}}
	var decisions []Decision
	failed := Outcome{Kind: KindExit, ExitCode: 1, Err: errors.New("exit status 1"), Stdout: "abc\n"}
	_, err = Run(t.Context(), Spec{Policies: []Policy{p}, Decided: func(d Decision) { decisions = append(decisions, d) }},
		func(ctx context.Context, n int) Outcome { return failed })
	want := `not retryable: retry_on when "int(output) > 2": invalid operation: int(abc) (1:1)`
	if len(decisions) != 1 || decisions[0].Action != "stop" || decisions[0].Reason != want {
		t.Fatalf("decisions %+v, want one stop with reason %q", decisions, want)
	}
	if !strings.Contains(err.Error(), "("+want+")") {
		t.Errorf("final error %q does not give the reason", err)
	}
}

// A loop continued from the Progress it reported before a delay runs the
// same attempts at the same times as one that was never interrupted.
func TestRunContinuesFromProgress(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := DefaultPolicy()
		p.Attempts = 4
		ctx, stop := context.WithCancel(t.Context())
		var saved []Progress
		spec := Spec{Policies: []Policy{p}, Waiting: func(pr Progress) error {
			saved = append(saved, pr)
			if len(saved) == 2 {
				stop() // the process ends while attempt 3 waits
			}
			return nil
		}}
		var starts []time.Duration
		t0 := time.Now()
		if _, err := Run(ctx, spec, script(&starts, t0, fail503)); !errors.Is(err, context.Canceled) {
			t.Fatalf("first run: %v", err)
		}
		want := Progress{Attempts: 2, Failures: []int{2}, Elapsed: 3 * time.Second, Delay: 2 * time.Second}
		if got := saved[1]; got.Attempts != want.Attempts || !slices.Equal(got.Failures, want.Failures) || got.Elapsed != want.Elapsed || got.Delay != want.Delay {
			t.Fatalf("progress %+v, want %+v", got, want)
		}
		slot := &recordingSlot{t0: time.Now(), held: true}
		spec.From, spec.Waiting, spec.Slot = &saved[1], nil, slot
		last, err := Run(t.Context(), spec, script(&starts, t0, fail503, fail503, fail503, ok))
		if err != nil || last.Attempt != 4 {
			t.Fatalf("continued run = %+v, %v", last, err)
		}
		if want := []time.Duration{0, time.Second, 3 * time.Second, 7 * time.Second}; !slices.Equal(starts, want) {
			t.Errorf("attempt starts %v, want %v", starts, want)
		}
		if want := []string{"release@0s", "acquire@2s", "release@2s", "acquire@6s"}; !slices.Equal(slot.log, want) || !slot.held {
			t.Errorf("slot log %v, held %v; want %v, held (given back during the resumed delay too)", slot.log, slot.held, want)
		}
	})
}
