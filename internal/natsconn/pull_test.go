package natsconn_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/runnerdev/runner/internal/natsconn"
	"github.com/runnerdev/runner/internal/natstest"
)

// pullFixture is a stream of n messages with a durable pull consumer,
// and the count of the pull requests the server got for it by now.
func pullFixture(t *testing.T, n int) (jetstream.Consumer, func() int) {
	t.Helper()
	srv := natstest.Start(t)
	nc := srv.Connect(t)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	s, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "S", Subjects: []string{"s.>"}, Retention: jetstream.WorkQueuePolicy})
	if err != nil {
		t.Fatal(err)
	}
	c, err := s.CreateConsumer(ctx, jetstream.ConsumerConfig{Durable: "C", AckPolicy: jetstream.AckExplicitPolicy})
	if err != nil {
		t.Fatal(err)
	}
	tapConn := srv.Connect(t)
	tap, err := tapConn.SubscribeSync("$JS.API.CONSUMER.MSG.NEXT.S.C")
	if err != nil {
		t.Fatal(err)
	}
	if err := tapConn.Flush(); err != nil {
		t.Fatal(err)
	}
	// The server copies a pull request to the tap as it gets it, before
	// it delivers a message for it: once the tap's connection has the
	// answer to a later ping, it has the requests.
	requests := func() int {
		if err := tapConn.Flush(); err != nil {
			t.Fatal(err)
		}
		n, _, err := tap.Pending()
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	for i := range n {
		if _, err := js.Publish(ctx, "s."+strconv.Itoa(i), nil); err != nil {
			t.Fatal(err)
		}
	}
	return c, requests
}

// A standing pull asks the server once for a batch of messages, not once
// per message (each pull of its own was a subscription, a request and an
// unsubscription).
func TestPullsAskOnceForABatch(t *testing.T) {
	const n = 20
	c, requests := pullFixture(t, n)
	p := natsconn.NewPulls(c, 64)
	defer p.Stop()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	for i := range n {
		msg, err := p.Next(ctx)
		if err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
		if err := msg.Ack(); err != nil {
			t.Fatal(err)
		}
	}
	// The tap's copy of the request came late once in a CI run (0 seen
	// after all 20 messages): wait for it a bounded while.
	got := requests()
	for deadline := time.Now().Add(5 * time.Second); got == 0 && time.Now().Before(deadline); got = requests() {
		time.Sleep(10 * time.Millisecond)
	}
	if got != 1 {
		t.Errorf("%d pull requests for %d messages, want 1", got, n)
	}
}
