package natscoord

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/runnerdev/runner/internal/testkit"
)

// ackedMsg is a message that records how it was acknowledged; its
// DoubleAck, when release is not nil, closes waiting and waits for
// release.
type ackedMsg struct {
	jetstream.Msg
	name             string
	log              *ackLog
	waiting, release chan struct{}
}

// heldMsg is an ackedMsg whose confirmation waits for its release.
func heldMsg(name string, log *ackLog) *ackedMsg {
	return &ackedMsg{name: name, log: log, waiting: make(chan struct{}), release: make(chan struct{})}
}

type ackLog struct {
	mu  sync.Mutex
	got []string
}

func (l *ackLog) add(s string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.got = append(l.got, s)
}

func (l *ackLog) copy() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.got)
}

func (m *ackedMsg) Ack() error { m.log.add("ack " + m.name); return nil }

func (m *ackedMsg) DoubleAck(ctx context.Context) error {
	if m.release != nil {
		close(m.waiting)
		<-m.release
	}
	m.log.add("confirmed " + m.name)
	return nil
}

// Results handed over to be acknowledged do not wait for the server:
// those handed over while a confirmation is awaited go out together, the
// last one confirmed, and close waits for that confirmation, after
// acknowledging what was handed over meanwhile. (In rounds: the
// goroutine, back from the first confirmation, may find close or the
// results first.)
func TestAcksConfirmEachBatchByItsLast(t *testing.T) {
	for range 20 {
		log := &ackLog{}
		first := heldMsg("1", log)
		a := newAcks()
		a.add(first)
		select {
		case <-first.waiting:
		case <-time.After(testkit.Scale(10 * time.Second)):
			t.Fatal("the first result's acknowledgement was not confirmed (DoubleAck) within 10 s")
		}
		a.add(&ackedMsg{name: "2", log: log})
		a.add(&ackedMsg{name: "3", log: log})
		closed := make(chan struct{})
		go func() { a.close(); close(closed) }()
		<-a.stop
		close(first.release)
		<-closed
		want := []string{"confirmed 1", "ack 2", "confirmed 3"}
		if got := log.copy(); !slices.Equal(got, want) {
			t.Fatalf("acknowledgements: %q, want %q", got, want)
		}
	}
}
