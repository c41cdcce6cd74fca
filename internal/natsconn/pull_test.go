package natsconn_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/runnerdev/runner/internal/natsconn"
	"github.com/runnerdev/runner/internal/natstest"
	"github.com/runnerdev/runner/internal/testkit"
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
	requests := tapRequests(t, srv.Connect(t), nc, "$JS.API.CONSUMER.MSG.NEXT.S.C")
	for i := range n {
		if _, err := js.Publish(ctx, "s."+strconv.Itoa(i), nil); err != nil {
			t.Fatal(err)
		}
	}
	return c, requests
}

// tapRequests counts the requests that nc, the puller's connection,
// sends on subject, as a tap on conn gets copies of them. The server
// copies them to the tap with no order to its deliveries of the messages
// they ask for (a test that had all its messages saw the copy of their
// request 3 ms later, 2 runs in 200 under load), but in the order nc
// sent them: what comes before a mark nc sends after them is all of
// them.
func tapRequests(t *testing.T, conn, nc *nats.Conn, subject string) func() int {
	t.Helper()
	mark := nats.NewInbox()
	copies := make(chan *nats.Msg, 1024)
	for _, subj := range []string{subject, mark} {
		if _, err := conn.ChanSubscribe(subj, copies); err != nil {
			t.Fatal(err)
		}
	}
	if err := conn.Flush(); err != nil {
		t.Fatal(err)
	}
	seen := 0
	return func() int {
		if err := nc.Publish(mark, nil); err != nil {
			t.Fatal(err)
		}
		for timeout := time.After(testkit.Scale(10 * time.Second)); ; {
			select {
			case m := <-copies:
				if m.Subject == mark {
					return seen
				}
				seen++
			case <-timeout:
				t.Fatal("the tap did not get the mark within 10 s")
			}
		}
	}
}

// A standing pull asks the server once for a batch of messages, not once
// per message (each pull of its own was a subscription, a request and an
// unsubscription).
func TestPullsAskOnceForABatch(t *testing.T) {
	const n = 20
	c, requests := pullFixture(t, n)
	p := natsconn.NewPulls(c, 64)
	defer p.Stop()
	ctx, cancel := context.WithTimeout(t.Context(), testkit.Scale(10*time.Second))
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
	if got := requests(); got != 1 {
		t.Errorf("%d pull requests for %d messages, want 1", got, n)
	}
}
