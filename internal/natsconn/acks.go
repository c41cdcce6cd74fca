package natsconn

import (
	"context"
	"sync"

	"github.com/nats-io/nats.go/jetstream"
)

// Acks acknowledges messages of one consumer off the path of the work
// they carry: the coordinator hands a result's message over once its
// outcome is recorded (or it is dropped) and goes on at once, a worker a
// task's once its result is stored and keeps the task's slot until the
// server confirmed it (so that a server restart runs again no more
// tasks than the slots: it forgets its last deliveries and their
// acknowledgements); a goroutine acknowledges
// all the messages handed over meanwhile together, the last one with a
// reply the server sends once it has processed it (a DoubleAck, at most
// AckDeadline). The server processes a consumer's acknowledgements in the
// order they come, so that reply confirms the whole batch. Messages whose
// batch got no reply may not be acknowledged: they come back after the
// consumer's ack_wait (a result is dropped then as a duplicate, a task
// runs again).
type Acks struct {
	mu      sync.Mutex
	queue   []jetstream.Msg
	settled chan struct{} // closed once the queue's batch is confirmed or given up
	wake    chan struct{} // one buffered: the queue has messages
	stop    chan struct{} // closed by close
	done    chan struct{} // closed when the goroutine ends
	once    sync.Once
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

// Add hands msg over to be acknowledged; the channel it returns is
// closed once the server confirmed it, or did not in time.
func (a *Acks) Add(msg jetstream.Msg) <-chan struct{} {
	a.mu.Lock()
	if len(a.queue) == 0 {
		a.settled = make(chan struct{})
	}
	a.queue = append(a.queue, msg)
	settled := a.settled
	a.mu.Unlock()
	select {
	case a.wake <- struct{}{}:
	default:
	}
	return settled
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
	batch, settled := a.queue, a.settled
	a.queue = nil
	a.mu.Unlock()
	if len(batch) == 0 {
		return
	}
	defer close(settled)
	for _, msg := range batch[:len(batch)-1] {
		_ = msg.Ack()
	}
	if err := Ack(context.Background(), batch[len(batch)-1]); err != nil && a.unconfirmed != nil {
		a.unconfirmed(len(batch), err)
	}
}
