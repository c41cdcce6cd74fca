package errorpolicy_test

import (
	"context"
	"fmt"
	"time"

	"github.com/runnerdev/runner/errorpolicy"
	"github.com/runnerdev/runner/internal/breaker"
)

// A job records every finished item; the tracker says when the failures
// are too many to go on. Here failure_threshold 0.25 stops the job once
// more than a quarter of at least four items failed.
func ExampleTracker() {
	p := errorpolicy.Default()
	p.FailureThreshold, p.MinItems = 0.25, 4
	t := errorpolicy.NewTracker(p)
	for i, failed := range []bool{false, true, false, false, true, false} {
		if v := t.Record(failed); v != nil {
			fmt.Printf("item %d: stop (%s): %s\n", i+1, v.Rule, v.Reason)
			return
		}
		fmt.Printf("item %d: go on\n", i+1)
	}
	// Output:
	// item 1: go on
	// item 2: go on
	// item 3: go on
	// item 4: go on
	// item 5: stop (failure_threshold): failure rate 40.0% (2 of 5 items) is over failure_threshold 25%
}

// max_failures stops a job at the N-th failed item, whatever the rate.
func ExampleTracker_maxFailures() {
	p := errorpolicy.Default()
	p.MaxFailures = 2
	t := errorpolicy.NewTracker(p)
	fmt.Println(t.Record(true))
	fmt.Println(t.Record(true).Reason)
	// Output:
	// <nil>
	// max_failures reached: 2 items failed
}

// The workflow circuit breaker opens after two failed items in a row and
// holds back the next item until its timeout has passed; a probe that
// succeeds closes it again.
func ExampleGate() {
	cfg := breaker.Config{FailureThreshold: 2, SuccessThreshold: 1, Timeout: 10 * time.Millisecond, HalfOpenRequests: 1}
	g := errorpolicy.NewGate(cfg, func(to string) { fmt.Println("breaker", to) })
	ctx := context.Background()
	for _, failed := range []bool{true, true, false} {
		pass, err := g.Admit(ctx) // the third waits out the timeout
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println("item ran, failed:", failed)
		pass.Done(failed)
	}
	// Output:
	// item ran, failed: true
	// item ran, failed: true
	// breaker open
	// breaker half_open
	// item ran, failed: false
	// breaker closed
}
