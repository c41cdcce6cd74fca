package natsconn

import (
	"context"
	"sync"

	"github.com/nats-io/nats.go/jetstream"
)

// Acks acknowledges messages of one consumer off the path of the work
// they carry: the coordinator hands a result's message over once its
// outcome is recorded (or it is dropped), a worker a task's once its
// result is stored, and each goes on at once; a goroutine acknowledges
// all the messages handed over meanwhile together, the last one with a
// reply the server sends once it has processed it (a DoubleAck, at most
// AckDeadline). The server processes a consumer's acknowledgements in the
// order they come, so that reply confirms the whole batch. Messages whose
// batch got no reply may not be acknowledged: they come back after the
// consumer's ack_wait (a result is dropped then as a duplicate, a task
// runs again).
type Acks struct {
	mu    sync.Mutex
	queue []jetstream.Msg
	wake  chan struct{} // one buffered: the queue has messages
	stop  chan struct{} // closed by close
	done  chan struct{} // closed when the goroutine ends
	once  sync.Once
	// unconfirmed, when not nil, is told of each batch of n messages
	// whose confirmation did not come.
	unconfirmed func(n int, err error)
}

// NewAcks starts acknowledging; unconfirmed, when not nil, is told of
// each batch of n messages whose confirmation did not come.
func NewAcks(unconfirmed func(n int, err error)) *Acks {
	a := &Acks{wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{}), unconfirmed: unconfirmed}
	go a.run()
	return a
}

// Add hands msg over to be acknowledged.
func (a *Acks) Add(msg jetstream.Msg) {
	a.mu.Lock()
	a.queue = append(a.queue, msg)
	a.mu.Unlock()
	select {
	case a.wake <- struct{}{}:
	default:
	}
}

// Close acknowledges what was handed over, waits for the server to
// confirm it (or for its deadline) and ends the goroutine; again, it
// does nothing.
func (a *Acks) Close() {
	a.once.Do(func() { close(a.stop) })
	<-a.done
}

func (a *Acks) run() {
	defer close(a.done)
	for {
		select {
		case <-a.wake:
			a.flush()
		case <-a.stop:
			a.flush()
			return
		}
	}
}

// flush acknowledges the messages handed over so far, confirmed by the
// server's reply to the last.
func (a *Acks) flush() {
	a.mu.Lock()
	batch := a.queue
	a.queue = nil
	a.mu.Unlock()
	if len(batch) == 0 {
		return
	}
	for _, msg := range batch[:len(batch)-1] {
		_ = msg.Ack()
	}
	if err := Ack(context.Background(), batch[len(batch)-1]); err != nil && a.unconfirmed != nil {
		a.unconfirmed(len(batch), err)
	}
}
