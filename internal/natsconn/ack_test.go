package natsconn

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/runnerdev/runner/internal/natstest"
)

// A task's acknowledgement that no server answers (its consumer has no
// leader: here, none at all) is tried again until the context ends, not
// given up at the first no-responders.
func TestAckElectedTriesAgainWhileNoLeaderAnswers(t *testing.T) {
	js, err := jetstream.New(natstest.Start(t).Connect(t))
	if err != nil {
		t.Fatal(err)
	}
	o, _ := openWith(t, js, 0)
	tasks, err := o.WorkerTasks(t.Context(), DefaultQueue, DefaultAckWait)
	if err != nil {
		t.Fatal(err)
	}
	if err := Publish(t.Context(), js, NewMsg(TaskSubject(DefaultQueue, "k", "1-1"), "j", []byte("{}")), "t1"); err != nil {
		t.Fatal(err)
	}
	msg, err := Next(t.Context(), tasks)
	if err != nil {
		t.Fatal(err)
	}
	if err := js.DeleteConsumer(t.Context(), TasksStream, WorkersConsumer(DefaultQueue)); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 500*time.Millisecond)
	defer cancel()
	err = AckElected(ctx, msg)
	// The context may end during a try (on a loaded machine, one in 30
	// runs): then the error is its end.
	tried := errors.Is(err, nats.ErrNoResponders) || errors.Is(err, context.DeadlineExceeded)
	if !tried || ctx.Err() == nil {
		t.Errorf("AckElected = %v with the context %v; want no responders, tried until the context ended", err, ctx.Err())
	}
}
