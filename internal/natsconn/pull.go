package natsconn

import (
	"context"
	"errors"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// pullHeartbeat is how often the server tells a waiting pull request
// that it still holds it: two missed tell the puller that a restarted
// server forgot it.
const pullHeartbeat = 2 * time.Second

// Pulls is a standing pull from a consumer: one subscription for as long
// as it lives, whose pull requests (each for up to batch messages, and
// held by the server 30 s) are made as the messages are taken, when fewer
// than half of a request's are still to come. A batch of 1 asks for one
// message when Next is called and for no other: nothing waits in this
// process while its ack_wait runs. Its methods are for one goroutine.
type Pulls struct {
	c     jetstream.Consumer
	batch int
	it    jetstream.MessagesContext // nil: made by the next Next
}

// NewPulls pulls from c, batch messages at a time.
func NewPulls(c jetstream.Consumer, batch int) *Pulls {
	return &Pulls{c: c, batch: batch}
}

// Next returns the next message, waiting until ctx ends. After an error
// other than ctx's end (the server's heartbeats stopped, the consumer is
// gone) it pauses, as the client is reconnecting meanwhile, and the next
// call pulls anew.
func (p *Pulls) Next(ctx context.Context) (jetstream.Msg, error) {
	var err error
	if p.it == nil {
		p.it, err = p.c.Messages(jetstream.PullMaxMessages(p.batch), jetstream.PullHeartbeat(pullHeartbeat))
	}
	var msg jetstream.Msg
	if err == nil {
		msg, err = p.next(ctx)
	}
	if err != nil && ctx.Err() == nil {
		p.Stop()
		select {
		case <-ctx.Done():
		case <-time.After(250 * time.Millisecond):
		}
	}
	return msg, err
}

// next waits for the iterator's next message until ctx ends: first in
// short steps (10 ms, doubling up to 640 ms), then at length. The client asks
// for more messages only as a wait starts, and not while its goroutine
// is still sending the request before (under load, a message can come
// back meanwhile): a wait that starts then asks for nothing, and would
// last until the server's heartbeats are missed (4 s). The next step
// asks again. The long wait keeps the client's heartbeat check, which
// each wait starts anew.
func (p *Pulls) next(ctx context.Context) (jetstream.Msg, error) {
	for step := 10 * time.Millisecond; step <= 640*time.Millisecond; step *= 2 {
		sctx, cancel := context.WithTimeout(ctx, step)
		msg, err := p.it.Next(jetstream.NextContext(sctx))
		cancel()
		if err == nil || ctx.Err() != nil || !errors.Is(err, context.DeadlineExceeded) {
			return msg, err
		}
	}
	return p.it.Next(jetstream.NextContext(ctx))
}

// Use pulls from c from now on (made again on a server that lost the
// one before).
func (p *Pulls) Use(c jetstream.Consumer) {
	p.Stop()
	p.c = c
}

// Stop ends the pull requests and the subscription.
func (p *Pulls) Stop() {
	if p.it != nil {
		p.it.Stop()
		p.it = nil
	}
}
