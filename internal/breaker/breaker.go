package breaker

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sony/gobreaker/v2"
)

// Config is a circuit_breaker block. Its defaults depend on where it is
// written (a step's or the workflow's); the parser fills them in.
type Config struct {
	FailureThreshold int           // consecutive failures that open it
	SuccessThreshold int           // consecutive half-open successes that close it
	Timeout          time.Duration // how long it stays open
	HalfOpenRequests int           // probes running at once while half-open
}

// ErrOpen is the refusal of an open breaker, or of a half-open one whose
// probe places are taken.
var ErrOpen = errors.New("circuit open")

// Result is what admitted work did, as the breaker counts it.
type Result int

// Results of admitted work.
const (
	Succeeded Result = iota
	Failed
	Excluded // did not run, or an interrupt stopped it: counts neither way
)

// ResultOf classifies work that ran under ctx. A failure while ctx was
// canceled is an interrupt of the job and is excluded; a deadline that
// killed the work (agent_timeout, retry_budget) leaves it a failure.
func ResultOf(ctx context.Context, failed bool) Result {
	switch {
	case !failed:
		return Succeeded
	case errors.Is(ctx.Err(), context.Canceled):
		return Excluded
	}
	return Failed
}

// Breaker is one circuit breaker, safe for concurrent use.
type Breaker struct {
	cb        *gobreaker.TwoStepCircuitBreaker[struct{}]
	maxProbes int
	gen       atomic.Uint64 // state changes so far

	// mu makes Allow and Done atomic with respect to each other, so that
	// a ticket's state and generation are those it was given in. It is
	// taken before gobreaker's lock, never inside it.
	mu     sync.Mutex
	probes int // admitted while half-open and not done
}

// New builds a breaker. gobreaker closes a half-open breaker after
// MaxRequests consecutive successes, so MaxRequests is SuccessThreshold;
// the breaker itself admits at most HalfOpenRequests of those probes at a
// time. onChange hears every transition as "open", "half_open" or
// "closed"; it runs with the breaker's locks held and must not call back
// into the breaker.
func New(name string, c Config, onChange func(to string)) *Breaker {
	b := &Breaker{maxProbes: max(c.HalfOpenRequests, 1)}
	threshold := uint32(max(c.FailureThreshold, 1))
	b.cb = gobreaker.NewTwoStepCircuitBreaker[struct{}](gobreaker.Settings{
		Name:        name,
		MaxRequests: uint32(max(c.SuccessThreshold, 1)),
		Timeout:     c.Timeout,
		ReadyToTrip: func(counts gobreaker.Counts) bool { return counts.ConsecutiveFailures >= threshold },
		IsExcluded:  func(err error) bool { return err == errExcluded },
		OnStateChange: func(_ string, _, to gobreaker.State) {
			b.gen.Add(1)
			if onChange != nil {
				onChange(stateName(to))
			}
		},
	})
	return b
}

var (
	errFailed   = errors.New("failed")
	errExcluded = errors.New("excluded")
)

func stateName(s gobreaker.State) string {
	switch s {
	case gobreaker.StateOpen:
		return "open"
	case gobreaker.StateHalfOpen:
		return "half_open"
	}
	return "closed"
}

// State is "closed", "open" or "half_open". Asking may half-open an open
// breaker whose timeout has passed.
func (b *Breaker) State() string { return stateName(b.cb.State()) }

// Allow admits one piece of work, or refuses it with ErrOpen. The
// ticket's Done must be called once the work ends or is given up.
func (b *Breaker) Allow() (*Ticket, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	// Only State and Allow move the breaker without b.mu (open to
	// half-open, when the timeout has passed), so from here on the state
	// and generation stay as read.
	st := b.cb.State()
	gen := b.gen.Load()
	probe := st == gobreaker.StateHalfOpen
	if st == gobreaker.StateOpen || probe && b.probes >= b.maxProbes {
		return nil, ErrOpen
	}
	finish, err := b.cb.Allow()
	if err != nil {
		return nil, ErrOpen
	}
	if probe {
		b.probes++
	}
	return &Ticket{b: b, gen: gen, finish: finish, probe: probe}, nil
}

// Ticket is one admitted piece of work.
type Ticket struct {
	b      *Breaker
	gen    uint64
	finish func(error)
	probe  bool
	once   sync.Once
}

// Stale reports that the breaker changed state since the ticket was given:
// work that has not started yet should give it back (Done(Excluded)) and
// ask again.
func (t *Ticket) Stale() bool { return t.b.gen.Load() != t.gen }

// Done records the work's result; calls after the first do nothing. A
// result given in an older state than the breaker's is not counted.
func (t *Ticket) Done(r Result) {
	t.once.Do(func() {
		b := t.b
		b.mu.Lock()
		defer b.mu.Unlock()
		if t.probe {
			b.probes--
		}
		switch r {
		case Succeeded:
			t.finish(nil)
		case Failed:
			t.finish(errFailed)
		default:
			t.finish(errExcluded)
		}
	})
}
