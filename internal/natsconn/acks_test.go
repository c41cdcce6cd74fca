package natsconn_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/runnerdev/runner/internal/natsconn"
)

// ackedMsg is a message that records how it was acknowledged; its
// DoubleAck waits for release when that is not nil, and fails with fail.
type ackedMsg struct {
	jetstream.Msg
	name    string
	log     *ackLog
	release chan struct{}
	fail    error
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
	return m.fail
}

// Messages handed over to be acknowledged do not wait for the server:
// those handed over while a confirmation is awaited go out together, the
// last one confirmed; each is settled once its batch's confirmation came
// (or failed: such a batch is told of), and Close waits for that.
func TestAcksConfirmEachBatchByItsLast(t *testing.T) {
	log := &ackLog{}
	first := &ackedMsg{name: "1", log: log, release: make(chan struct{})}
	var unconfirmed []int
	a := natsconn.NewAcks(func(n int, err error) { unconfirmed = append(unconfirmed, n) })
	a.Add(first)
	a.Add(&ackedMsg{name: "2", log: log})
	settled := a.Add(&ackedMsg{name: "3", log: log, fail: errors.New("no reply")})
	close(first.release)
	<-settled
	if got := log.copy(); !slices.Contains(got, "confirmed 3") {
		t.Errorf("message 3 settled after %q, before its confirmation", got)
	}
	a.Close()
	// The goroutine may take the first message alone or with the others.
	alone := []string{"confirmed 1", "ack 2", "confirmed 3"}
	together := []string{"ack 1", "ack 2", "confirmed 3"}
	if !slices.Equal(log.got, alone) && !slices.Equal(log.got, together) {
		t.Errorf("acknowledgements: %q, want %q or %q", log.got, alone, together)
	}
	want := []int{3}
	if slices.Equal(log.got, alone) {
		want = []int{2}
	}
	if !slices.Equal(unconfirmed, want) {
		t.Errorf("batches told unconfirmed: %v, want the last one's", unconfirmed)
	}
}
