package natscoord

import (
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/runnerdev/runner/internal/natsconn"
	"github.com/runnerdev/runner/internal/natstest"
	"github.com/runnerdev/runner/internal/testkit"
)

// A task whose publish the server refuses is published again, under the
// same message id, until the server stores it; then the job ends.
func TestRefusedTaskIsPublishedAgain(t *testing.T) {
	srv := natstest.Start(t)
	nc := srv.Connect(t)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	// A tasks stream that refuses every task: the coordinator uses it as
	// it finds it.
	cfg := jetstream.StreamConfig{Name: natsconn.TasksStream, Subjects: []string{"runner.task.>"}, Retention: jetstream.WorkQueuePolicy, MaxMsgSize: 16}
	if _, err := js.CreateStream(t.Context(), cfg); err != nil {
		t.Fatal(err)
	}
	published := make(chan string, 64)
	tap, err := nc.Subscribe("runner.task.>", func(m *nats.Msg) { published <- m.Header.Get(jetstream.MsgIDHeader) })
	if err != nil {
		t.Fatal(err)
	}
	defer tap.Unsubscribe()

	j := startJob(t, jobDir(t), "mode: mapreduce\nmap:\n  input: seq 1 1\n  agent_template:\n    - shell: \"true\"\n")
	done := startMap(t, j, time.Minute, Options{Conn: srv.Connect(t)})
	first := receive(t, published)
	if again := receive(t, published); again != first {
		t.Fatalf("the task went out again as %q, first as %q: want the same message id", again, first)
	}
	cfg.MaxMsgSize = natsconn.MaxPayload
	if _, err := js.UpdateStream(t.Context(), cfg); err != nil {
		t.Fatal(err)
	}
	runWorker(t, srv, natsconn.DefaultQueue)
	finishSucceeded(t, j, <-done, 1)
}

// receive is the next value of ch, waited for at most 10 s.
func receive(t *testing.T, ch <-chan string) string {
	t.Helper()
	select {
	case s := <-ch:
		return s
	case <-time.After(testkit.Scale(10 * time.Second)):
		t.Fatal("nothing was published within 10 s")
		return ""
	}
}
