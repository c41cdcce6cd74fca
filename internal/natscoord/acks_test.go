package natscoord

import (
	"context"
	"slices"
	"sync"
	"testing"

	"github.com/nats-io/nats.go/jetstream"
)

// ackedMsg is a message that records how it was acknowledged; its
// DoubleAck waits for release when that is not nil.
type ackedMsg struct {
	jetstream.Msg
	name    string
	log     *ackLog
	release chan struct{}
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
		<-m.release
	}
	m.log.add("confirmed " + m.name)
	return nil
}

// Results handed over to be acknowledged do not wait for the server:
// those handed over while a confirmation is awaited go out together, the
// last one confirmed, and close waits for that confirmation.
func TestAcksConfirmEachBatchByItsLast(t *testing.T) {
	log := &ackLog{}
	first := &ackedMsg{name: "1", log: log, release: make(chan struct{})}
	a := newAcks()
	a.add(first)
	a.add(&ackedMsg{name: "2", log: log})
	a.add(&ackedMsg{name: "3", log: log})
	close(first.release)
	a.close()
	// The goroutine may take the first message alone or with the others.
	alone := []string{"confirmed 1", "ack 2", "confirmed 3"}
	together := []string{"ack 1", "ack 2", "confirmed 3"}
	if got := log.copy(); !slices.Equal(got, alone) && !slices.Equal(got, together) {
		t.Errorf("acknowledgements: %q, want %q or %q", got, alone, together)
	}
}
