package natsworker

import (
	"encoding/json"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/runnerdev/runner/internal/eventlog"
	"github.com/runnerdev/runner/internal/natsconn"
	"github.com/runnerdev/runner/internal/natstest"
	"github.com/runnerdev/runner/internal/testkit"
)

// sent records the sends that went, in order.
type sent struct {
	mu  sync.Mutex
	ids []int
}

func (s *sent) send(h *heldSends, id int) {
	h.send(func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.ids = append(s.ids, id)
	})
}

func (s *sent) got() []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.ids)
}

// What a run sends in its hold goes, in order, when the hold ends; what it
// sends after, at once.
func TestHeldSendsGoInOrderWhenTheHoldEnds(t *testing.T) {
	var s sent
	h := holdFor(time.Hour)
	s.send(h, 1)
	s.send(h, 2)
	if got := s.got(); len(got) != 0 {
		t.Fatalf("sent during the hold: %v", got)
	}
	h.release()
	s.send(h, 3)
	if got := s.got(); !slices.Equal(got, []int{1, 2, 3}) {
		t.Errorf("sent %v, want [1 2 3]", got)
	}
}

// A run that ends within its hold sends nothing of it, even when the hold
// would have ended later.
func TestHeldSendsOfARunEndedInItsHoldAreDropped(t *testing.T) {
	var s sent
	h := holdFor(time.Millisecond)
	s.send(h, 1)
	h.drop()
	h.release() // the hold's end, come late
	s.send(h, 2)
	if got := s.got(); len(got) != 0 {
		t.Errorf("sent %v after the run ended, want nothing", got)
	}
}

// The hold ends by itself.
func TestHoldEndsByItself(t *testing.T) {
	var s sent
	h := holdFor(time.Millisecond)
	s.send(h, 1)
	testkit.Poll(func() bool { return len(s.got()) > 0 })
	if got := s.got(); !slices.Equal(got, []int{1}) {
		t.Errorf("sent %v, want [1]", got)
	}
}

// A run's events are published once its hold is over, numbered in order,
// and not at all when it ends within it.
func TestReporterHoldsEventsBack(t *testing.T) {
	conn := natstest.Start(t).Connect(t)
	msgs := make(chan *nats.Msg, 10)
	sub, err := conn.ChanSubscribe(natsconn.ProgressSubject("k"), msgs)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	short := &reporter{conn: conn, subject: natsconn.ProgressSubject("k"), held: holdFor(time.Hour)}
	short.event(eventlog.Event{Type: eventlog.TypeStepStarted})
	short.held.drop()
	long := &reporter{conn: conn, subject: natsconn.ProgressSubject("k"), held: holdFor(time.Hour)}
	long.event(eventlog.Event{Type: eventlog.TypeStepStarted})
	long.event(eventlog.Event{Type: eventlog.TypeStepCompleted})
	long.held.release()
	if err := conn.Flush(); err != nil {
		t.Fatal(err)
	}
	var seqs []int
	for len(seqs) < 2 {
		select {
		case m := <-msgs:
			var p natsconn.Progress
			if err := json.Unmarshal(m.Data, &p); err != nil {
				t.Fatal(err)
			}
			seqs = append(seqs, p.Seq)
		case <-time.After(testkit.Scale(10 * time.Second)):
			t.Fatalf("events published: %v, want the long run's two", seqs)
		}
	}
	if !slices.Equal(seqs, []int{1, 2}) {
		t.Errorf("events published numbered %v, want [1 2] (the long run's only)", seqs)
	}
	select {
	case m := <-msgs:
		t.Errorf("a third message: %s", m.Data)
	default:
	}
}
