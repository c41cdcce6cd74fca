package retryv2_test

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"time"

	"github.com/runnerdev/runner/retryv2"
)

// A command that fails twice with a server error, then succeeds. The policy
// retries server errors and exit code 75 with exponential backoff (1ms,
// 2ms, ... here, to keep the example fast); Decided hears every decision.
func Example() {
	p := retryv2.DefaultPolicy()
	p.Attempts = 5
	p.InitialDelay = time.Millisecond
	p.RetryOn = []retryv2.Matcher{
		{Kind: retryv2.MatchServerError, Source: "server_error"},
		{Kind: retryv2.MatchExitCodes, ExitCodes: []int{75}, Source: "exit_codes 75"},
	}
	spec := retryv2.Spec{
		Policies: []retryv2.Policy{p},
		Decided: func(d retryv2.Decision) {
			fmt.Printf("attempt %d/%d failed (%s): %s in %v, %s\n", d.Attempt, d.Limit, d.Failure.Message(), d.Action, d.Delay, d.Reason)
		},
	}
	last, err := retryv2.Run(context.Background(), spec, func(ctx context.Context, n int) retryv2.Outcome {
		if n < 3 {
			return retryv2.Outcome{Attempt: n, Kind: retryv2.KindExit, ExitCode: 22, Err: errors.New("exit status 22"),
				Stderr: "curl: (22) The requested URL returned error: 503\n"}
		}
		return retryv2.Outcome{Attempt: n, Stdout: "ok\n"}
	})
	fmt.Println("attempt", last.Attempt, "succeeded:", err == nil)
	// Output:
	// attempt 1/5 failed (exit status 22: curl: (22) The requested URL returned error: 503): retry in 1ms, matched server_error
	// attempt 2/5 failed (exit status 22: curl: (22) The requested URL returned error: 503): retry in 2ms, matched server_error
	// attempt 3 succeeded: true
}

// A failure no matcher accepts ends the loop at once, with an *Error that
// says why.
func ExampleRun_notRetryable() {
	p := retryv2.DefaultPolicy()
	p.RetryOn = []retryv2.Matcher{{Kind: retryv2.MatchPattern, Pattern: regexp.MustCompile(`lock held`), Source: `pattern "lock held"`}}
	_, err := retryv2.Run(context.Background(), retryv2.Spec{Policies: []retryv2.Policy{p}}, func(ctx context.Context, n int) retryv2.Outcome {
		return retryv2.Outcome{Attempt: n, Kind: retryv2.KindExit, ExitCode: 2, Err: errors.New("exit status 2"), Stderr: "usage: deploy ENV\n"}
	})
	var failed *retryv2.Error
	fmt.Println(errors.As(err, &failed), failed.Reason)
	fmt.Println(err)
	// Output:
	// true not retryable
	// failed after 1 attempt (not retryable): exit status 2: usage: deploy ENV
}

// The delays after the first six failures under each strategy, with the
// defaults: initial_delay 1s, max_delay 30s, no jitter.
func ExamplePolicy_Delay() {
	for _, s := range retryv2.Strategies {
		p := retryv2.DefaultPolicy()
		p.Backoff = retryv2.Backoff{Strategy: s, Delays: []time.Duration{time.Second, 5 * time.Second}}
		fmt.Printf("%-12s", s)
		for k := 1; k <= 6; k++ {
			fmt.Printf(" %v", p.Delay(k, nil))
		}
		fmt.Println()
	}
	// Output:
	// fixed        1s 1s 1s 1s 1s 1s
	// linear       1s 2s 3s 4s 5s 6s
	// exponential  1s 2s 4s 8s 16s 30s
	// fibonacci    1s 1s 2s 3s 5s 8s
	// custom       1s 5s 30s 30s 30s 30s
}

// Jitter spreads the delays of commands that failed together; the random
// source is passed in, so that a seed reproduces a schedule.
func ExamplePolicy_Delay_jitter() {
	p := retryv2.DefaultPolicy()
	p.InitialDelay = 10 * time.Second
	p.Jitter, p.JitterFactor = retryv2.ProportionalJitter, 0.5
	for _, r := range []float64{0, 0.5, 0.99} {
		fmt.Println(p.Delay(1, func() float64 { return r }))
	}
	// Output:
	// 7.5s
	// 10s
	// 12.45s
}

// A policy built in code is checked before it runs: a misspelt strategy
// is an error, not some other backoff.
func ExamplePolicy_Validate() {
	p := retryv2.DefaultPolicy()
	p.Backoff.Strategy = "exponentail"
	fmt.Println(p.Validate())
	// Output:
	// unknown backoff strategy "exponentail" (want one of "fixed", "linear", "exponential", "fibonacci", "custom")
}
