// Package breaker is the circuit breaker behind both a step's
// circuit_breaker and the workflow's: sony/gobreaker's two-step breaker,
// plus a bound on the probes running at once while half-open and results
// that count neither way.
//
// New builds a Breaker from a Config. Allow admits one piece of work and
// returns a Ticket, or refuses it with ErrOpen; the ticket's Done records
// what the work did:
//
//	b := breaker.New("deploy", breaker.Config{FailureThreshold: 3, SuccessThreshold: 1,
//		Timeout: time.Minute, HalfOpenRequests: 1}, nil)
//	t, err := b.Allow()
//	if err != nil {
//		return err // breaker.ErrOpen
//	}
//	failed := work(ctx) != nil
//	t.Done(breaker.ResultOf(ctx, failed))
//
// Succeeded and Failed move the breaker; Excluded (work that never ran, or
// that an interrupt of the job stopped) says nothing about health: it does
// not close a half-open breaker and does not reset the count of consecutive
// failures. ResultOf tells an interrupt from a deadline that killed the
// work, which is a failure.
package breaker
