package breaker

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

func allow(t *testing.T, b *Breaker) *Ticket {
	t.Helper()
	tk, err := b.Allow()
	if err != nil {
		t.Fatalf("Allow in state %s: %v", b.State(), err)
	}
	return tk
}

// Half-open: at most half_open_requests probes run at once, and
// success_threshold consecutive successes close the breaker.
func TestHalfOpenProbes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := New("x", Config{FailureThreshold: 1, SuccessThreshold: 3, Timeout: time.Second, HalfOpenRequests: 2}, nil)
		allow(t, b).Done(Failed)                   // opens
		time.Sleep(time.Second + time.Millisecond) // gobreaker half-opens strictly after the timeout
		p1, err1 := b.Allow()
		p2, err2 := b.Allow()
		_, err3 := b.Allow()
		if err1 != nil || err2 != nil || !errors.Is(err3, ErrOpen) {
			t.Fatalf("half-open admitted: %v %v %v; want two probes, the third refused", err1, err2, err3)
		}
		p1.Done(Succeeded)
		p2.Done(Succeeded)
		if b.State() != "half_open" {
			t.Fatalf("closed after 2 successes, want 3")
		}
		allow(t, b).Done(Succeeded)
		if b.State() != "closed" {
			t.Errorf("state %s after 3 successes, want closed", b.State())
		}
	})
}

// An excluded result neither closes a half-open breaker nor resets the
// count of consecutive failures; it frees its probe place.
func TestExcludedSaysNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var transitions []string
		b := New("x", Config{FailureThreshold: 2, SuccessThreshold: 1, Timeout: time.Second, HalfOpenRequests: 1},
			func(to string) { transitions = append(transitions, to) })
		allow(t, b).Done(Failed)
		allow(t, b).Done(Excluded)
		allow(t, b).Done(Failed)
		if b.State() != "open" {
			t.Fatalf("state %s: an excluded result between two failures reset the count", b.State())
		}
		time.Sleep(time.Second + time.Millisecond)
		allow(t, b).Done(Excluded)
		if b.State() != "half_open" {
			t.Fatalf("state %s: a probe given back closed the breaker", b.State())
		}
		allow(t, b).Done(Succeeded) // the place is free again; the real probe closes it
		if got := strings.Join(transitions, ","); got != "open,half_open,closed" {
			t.Errorf("transitions %s", got)
		}
	})
}

// A ticket goes stale when the breaker changes state after it was given,
// and not because Allow itself half-opened the breaker.
func TestTicketStale(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := New("x", Config{FailureThreshold: 1, SuccessThreshold: 1, Timeout: time.Second, HalfOpenRequests: 1}, nil)
		running, waiting := allow(t, b), allow(t, b)
		running.Done(Failed) // opens
		if !waiting.Stale() {
			t.Fatal("ticket still fresh after the breaker opened")
		}
		waiting.Done(Succeeded)
		if b.State() != "open" {
			t.Fatalf("a stale ticket's success moved the breaker to %s", b.State())
		}
		time.Sleep(time.Second + time.Millisecond)
		if probe := allow(t, b); probe.Stale() {
			t.Error("the probe admitted as the breaker half-opened is stale")
		}
	})
}

func TestResultOf(t *testing.T) {
	canceled, cancel := context.WithCancel(t.Context())
	cancel()
	expired, cancel2 := context.WithTimeout(t.Context(), 0)
	defer cancel2()
	<-expired.Done()
	tests := []struct {
		name   string
		ctx    context.Context
		failed bool
		want   Result
	}{
		{"success", t.Context(), false, Succeeded},
		{"failure", t.Context(), true, Failed},
		{"killed by a deadline", expired, true, Failed},
		{"interrupted", canceled, true, Excluded},
		{"succeeded as the job was interrupted", canceled, false, Succeeded},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ResultOf(tt.ctx, tt.failed); got != tt.want {
				t.Errorf("ResultOf = %d, want %d", got, tt.want)
			}
		})
	}
}
