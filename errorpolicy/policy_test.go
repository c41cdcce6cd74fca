package errorpolicy

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/runnerdev/runner/internal/breaker"
)

// State is "closed", "open" or "half_open".
func (g *Gate) State() string { return g.b.State() }

func TestTrackerStops(t *testing.T) {
	p := Default()
	tests := []struct {
		name     string
		mod      func(*Policy)
		outcomes string // f = failed, s = succeeded
		stopAt   int    // 1-based index of the outcome that stops; 0 = never
		reason   string
	}{
		{"default continues", nil, "fffffffffff", 0, ""},
		{"stop action", func(p *Policy) { p.OnItemFailure = Stop }, "ssf", 3, "on_item_failure is stop"},
		{"no continue", func(p *Policy) { p.ContinueOnFailure = false }, "sfs", 2, "continue_on_failure is false"},
		{"max failures", func(p *Policy) { p.MaxFailures = 3 }, "fsfsfs", 5, "max_failures reached: 3 items failed"},
		{"threshold waits for min_items", func(p *Policy) { p.FailureThreshold, p.MinItems = 0.25, 4 }, "fff", 0, ""},
		{"threshold reached on a success at min_items", func(p *Policy) { p.FailureThreshold, p.MinItems = 0.25, 4 }, "ffss", 4, "failure rate 50.0% (2 of 4 items)"},
		{"threshold equal is not over", func(p *Policy) { p.FailureThreshold, p.MinItems = 0.5, 2 }, "sfsfsf", 0, ""},
		{"threshold before min_items", func(p *Policy) { p.FailureThreshold, p.MinItems = 0.1, 10 }, "fffsssssss", 10, "failure rate 30.0% (3 of 10 items)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pol := p
			if tt.mod != nil {
				tt.mod(&pol)
			}
			tr := NewTracker(pol)
			for i, o := range tt.outcomes {
				reason := ""
				if stop := tr.Record(o == 'f'); stop != nil {
					reason = stop.Rule + ": " + stop.Reason
				}
				switch {
				case i+1 == tt.stopAt && !strings.Contains(reason, tt.reason):
					t.Fatalf("outcome %d: stop %q, want %q", i+1, reason, tt.reason)
				case i+1 != tt.stopAt && reason != "":
					t.Fatalf("outcome %d: stopped early: %q", i+1, reason)
				case i+1 == tt.stopAt:
					return
				}
			}
		})
	}
}

func TestCollectionDue(t *testing.T) {
	var due []int
	for n := 1; n <= 7; n++ {
		if (Collection{Mode: "batched", BatchSize: 3}).Due(n) {
			due = append(due, n)
		}
	}
	if !slices.Equal(due, []int{3, 6}) {
		t.Errorf("batched 3 due at %v", due)
	}
	if (Collection{Mode: "aggregate"}).Due(1) || !(Collection{Mode: "immediate"}).Due(1) {
		t.Error("aggregate is never due, immediate always")
	}
}

func TestGatePausesDispatchThenProbes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var transitions []string
		g := NewGate(breaker.Config{FailureThreshold: 2, SuccessThreshold: 2, Timeout: 30 * time.Second, HalfOpenRequests: 1},
			func(to string) { transitions = append(transitions, to) })
		ctx := t.Context()
		admit := func() func(bool) {
			t.Helper()
			pass, err := g.Admit(ctx)
			if err != nil {
				t.Fatal(err)
			}
			return pass.Done
		}
		admit()(true)
		admit()(true) // the second consecutive failure opens it
		if g.State() != "open" {
			t.Fatalf("state %s", g.State())
		}
		t0 := time.Now()
		probe := admit() // waits out the pause
		if waited := time.Since(t0); waited < 30*time.Second || waited > 30*time.Second+time.Millisecond {
			t.Errorf("first probe admitted after %v, want 30s", waited)
		}
		// While the one probe runs, nothing else is admitted.
		admitted := make(chan func(bool))
		go func() {
			pass, _ := g.Admit(ctx)
			admitted <- pass.Done
		}()
		synctest.Wait()
		select {
		case <-admitted:
			t.Fatal("a second item started while the half-open probe ran")
		default:
		}
		probe(false)
		second := <-admitted // the probe's end admits the next probe
		second(false)        // two consecutive successes close it
		if g.State() != "closed" {
			t.Errorf("state %s after two probe successes", g.State())
		}
		want := "open,half_open,closed"
		if got := strings.Join(transitions, ","); got != want {
			t.Errorf("transitions %s, want %s", got, want)
		}
	})
}

func TestGateProbeFailureReopens(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := NewGate(breaker.Config{FailureThreshold: 1, SuccessThreshold: 1, Timeout: time.Second, HalfOpenRequests: 1}, nil)
		pass, _ := g.Admit(t.Context())
		pass.Done(true)
		pass, _ = g.Admit(t.Context()) // after 1s
		pass.Done(true)
		if g.State() != "open" {
			t.Errorf("state %s after a failed probe, want open", g.State())
		}
	})
}

func TestGateAdmitEndsWithContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := NewGate(breaker.Config{FailureThreshold: 1, SuccessThreshold: 1, Timeout: time.Hour, HalfOpenRequests: 1}, nil)
		pass, _ := g.Admit(t.Context())
		pass.Done(true)
		cause := errors.New("stopped")
		ctx, cancel := context.WithCancelCause(t.Context())
		time.AfterFunc(time.Second, func() { cancel(cause) })
		if _, err := g.Admit(ctx); !errors.Is(err, cause) {
			t.Errorf("Admit = %v, want the cancel cause", err)
		}
	})
}

// A pass given while closed goes stale when the breaker opens before the
// item could start; its result is then not counted.
func TestGatePassGoesStale(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := NewGate(breaker.Config{FailureThreshold: 1, SuccessThreshold: 1, Timeout: time.Second, HalfOpenRequests: 1}, nil)
		running, _ := g.Admit(t.Context())
		waiting, _ := g.Admit(t.Context()) // admitted while closed, waits for a slot
		if waiting.Stale() {
			t.Fatal("fresh pass is stale")
		}
		running.Done(true) // opens the breaker
		if !waiting.Stale() {
			t.Fatal("pass still valid after the breaker opened")
		}
		waiting.Return()
		if g.State() != "open" {
			t.Errorf("a stale pass given back changed the state to %s", g.State())
		}
	})
}

// Once the pause is over, the one pass the gate gives is a probe of the
// half-open breaker: it is not stale, and giving it back (its item could
// not start) neither closes the breaker nor lets more items in; only the
// probe's own success closes it.
func TestGateProbeAfterPause(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var transitions []string
		g := NewGate(breaker.Config{FailureThreshold: 1, SuccessThreshold: 1, Timeout: time.Second, HalfOpenRequests: 1},
			func(to string) { transitions = append(transitions, to) })
		pass, _ := g.Admit(t.Context())
		pass.Done(true)
		probe, _ := g.Admit(t.Context()) // after 1s
		if probe.Stale() {
			t.Fatal("the probe admitted as the breaker half-opened is stale")
		}
		probe.Return()
		if g.State() != "half_open" {
			t.Fatalf("state %s after a probe was given back, want half_open", g.State())
		}
		probe, _ = g.Admit(t.Context())
		second := make(chan *Pass)
		go func() {
			p, _ := g.Admit(t.Context())
			second <- p
		}()
		synctest.Wait()
		select {
		case <-second:
			t.Fatal("a second item was admitted while the probe ran")
		default:
		}
		probe.Done(false)
		(<-second).Done(false)
		if got := strings.Join(transitions, ","); got != "open,half_open,closed" {
			t.Errorf("transitions %s, want open,half_open,closed", got)
		}
	})
}
