package natsconn

import (
	"context"
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
// than half of a request's are still to come. The messages asked for wait
// in this process until they are taken (their ack_wait runs meanwhile):
// it suits a consumer read by one process at the pace they come (a job's
// results), not one shared by workers that should take no more than they
// can run. Its methods are for one goroutine.
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
		msg, err = p.it.Next(jetstream.NextContext(ctx))
	}
	if err != nil && ctx.Err() == nil {
		p.Stop()
		sleep(ctx, 250*time.Millisecond)
	}
	return msg, err
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
