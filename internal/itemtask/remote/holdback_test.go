package remote

import (
	"slices"
	"sync"
	"testing"
	"time"

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
