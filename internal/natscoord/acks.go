package natscoord

import (
	"context"
	"sync"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/runnerdev/runner/internal/natsconn"
)

// acks acknowledges a job's results off the items' path: the dispatcher
// hands a result's message over once its outcome is recorded (or it is
// dropped) and goes on at once; a goroutine acknowledges all the messages
// handed over meanwhile together, the last one with a reply the server
// sends once it has processed it (a DoubleAck, at most AckDeadline). The
// server processes a consumer's acknowledgements in the order they come,
// so that reply confirms the whole batch. Results whose batch got no reply
// may not be acknowledged: they come back after the consumer's ack_wait
// (60 s) and are dropped then, as duplicates. (A worker does not batch
// its tasks' acknowledgements: one queued behind a confirmation that
// waits out its deadline could outlive the task's ack_wait and run
// again.)
type acks struct {
	mu    sync.Mutex
	queue []jetstream.Msg
	wake  chan struct{} // one buffered: the queue has messages
	stop  chan struct{} // closed by close
	done  chan struct{} // closed when the goroutine ends
	once  sync.Once
}

func newAcks() *acks {
	a := &acks{wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	go a.run()
	return a
}

// add hands msg over to be acknowledged.
func (a *acks) add(msg jetstream.Msg) {
	a.mu.Lock()
	a.queue = append(a.queue, msg)
	a.mu.Unlock()
	select {
	case a.wake <- struct{}{}:
	default:
	}
}

// close acknowledges what was handed over, waits for the server to
// confirm it (or for its deadline) and ends the goroutine; again, it
// does nothing.
func (a *acks) close() {
	a.once.Do(func() { close(a.stop) })
	<-a.done
}

func (a *acks) run() {
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
func (a *acks) flush() {
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
	// Not the job's context: a recorded outcome's result is acknowledged
	// after an interrupt too, or it comes back (natsconn.Ack bounds the
	// wait).
	_ = natsconn.Ack(context.Background(), batch[len(batch)-1])
}
