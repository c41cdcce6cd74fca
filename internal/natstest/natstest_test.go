package natstest

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/runnerdev/runner/internal/testkit"
)

func TestMain(m *testing.M) {
	ServeIfChild()
	os.Exit(m.Run())
}

// stored publishes one message to a new stream and returns a function
// that reads it back.
func stored(t *testing.T, nc *nats.Conn) func() string {
	ctx, cancel := context.WithTimeout(context.Background(), testkit.Scale(10*time.Second))
	defer cancel()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	s, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "T", Subjects: []string{"t.>"}, Storage: jetstream.FileStorage})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := js.Publish(ctx, "t.1", []byte("kept")); err != nil {
		t.Fatal(err)
	}
	return func() string {
		deadline := time.Now().Add(testkit.Scale(10 * time.Second))
		for {
			ctx, cancel := context.WithTimeout(context.Background(), testkit.Scale(time.Second))
			msg, err := s.GetMsg(ctx, 1)
			cancel()
			if err == nil {
				return string(msg.Data)
			}
			if time.Now().After(deadline) {
				t.Fatalf("reading the message back: %v", err)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
}

func TestStartServesJetStream(t *testing.T) {
	s := Start(t)
	if got := stored(t, s.Connect(t))(); got != "kept" {
		t.Errorf("read %q", got)
	}
}

// A message the server acknowledged survives its kill -9: the restarted
// server, on the same store and port, still has it.
func TestProcessSurvivesKill(t *testing.T) {
	p := Process(t, t.TempDir(), 0)
	nc := p.Connect(t)
	read := stored(t, nc)
	p.Kill()
	p.Restart()
	if got := read(); got != "kept" {
		t.Errorf("after kill -9 and restart, read %q", got)
	}
}
