package breaker_test

import (
	"context"
	"fmt"
	"time"

	"github.com/runnerdev/runner/internal/breaker"
)

// Two failures in a row open the breaker, which then refuses work until
// its timeout has passed; work an interrupt stopped counts neither way.
func Example() {
	b := breaker.New("deploy", breaker.Config{FailureThreshold: 2, SuccessThreshold: 1, Timeout: time.Hour, HalfOpenRequests: 1},
		func(to string) { fmt.Println("breaker", to) })
	names := map[breaker.Result]string{breaker.Succeeded: "succeeded", breaker.Failed: "failed", breaker.Excluded: "excluded"}
	interrupted, cancel := context.WithCancel(context.Background())
	cancel()
	for _, run := range []struct {
		ctx    context.Context
		failed bool
	}{{context.Background(), true}, {interrupted, true}, {context.Background(), true}, {context.Background(), false}} {
		t, err := b.Allow()
		if err != nil {
			fmt.Println("refused:", err)
			continue
		}
		r := breaker.ResultOf(run.ctx, run.failed)
		fmt.Println("ran:", names[r])
		t.Done(r)
	}
	fmt.Println(b.State())
	// Output:
	// ran: failed
	// ran: excluded
	// ran: failed
	// breaker open
	// refused: circuit open
	// open
}
