package natscoord

import (
	"os"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/runnerdev/runner/internal/dispatchtest"
	"github.com/runnerdev/runner/internal/itemtask"
	"github.com/runnerdev/runner/internal/job"
	"github.com/runnerdev/runner/internal/natsconn"
	"github.com/runnerdev/runner/internal/natstest"
	"github.com/runnerdev/runner/internal/state"
)

// The NATS dispatcher, with workers in this process on an in-process
// server, honours the item seam's contract as far as its capabilities
// go. A step loses its worker by asking to be cut off the server (a file
// lost-NAME in the working directory): the task comes back to another
// worker once its ack wait is up, and after MaxDeliveries the next
// worker fails it as kind lost.
func TestNATSConformance(t *testing.T) {
	srv := natstest.Start(t)
	nc := srv.Connect(t)
	dispatchtest.Run(t, dispatchtest.Subject{
		Backend: func(t *testing.T, j *job.Job) itemtask.Backend {
			cuts := map[string]func(){}
			for _, name := range []string{"w1", "w2", "w3"} {
				cuts[name] = runNamedWorker(t, srv, natsconn.DefaultQueue, name)
			}
			go cutLostWorkers(t, cuts)
			return New(Options{Conn: srv.Connect(t), Dist: state.Dist{Queue: natsconn.DefaultQueue}, MaxDeliveries: 2})
		},
		Lose:   "touch lost-$RUNNER_WORKER && exec sleep 600",
		Frames: "github.com/runnerdev/runner/internal/natscoord.(*Dispatcher).",
		Held:   func(t *testing.T, j *job.Job) dispatchtest.Held { return held(t, nc, j.Meta().Dist.Key) },
	})
}

// held is what the server of nc holds of the job of key: its results not
// acknowledged and delivered, and its tasks, results, consumer, spec and
// git bucket.
func held(t *testing.T, nc *nats.Conn, key string) dispatchtest.Held {
	t.Helper()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	var h dispatchtest.Held
	ctx := t.Context()
	if c, err := js.Consumer(ctx, natsconn.ResultsStream, natsconn.JobConsumer(key)); err == nil {
		info := c.CachedInfo()
		h.Unacked, h.Delivered = info.NumAckPending+int(info.NumPending), int(info.Delivered.Consumer)
		h.Left = append(h.Left, "consumer "+natsconn.JobConsumer(key))
	}
	for stream, filter := range map[string]string{natsconn.TasksStream: "runner.task.*." + key + ".>", natsconn.ResultsStream: natsconn.JobResultsSubject(key)} {
		s, err := js.Stream(ctx, stream)
		if err != nil {
			t.Fatal(err)
		}
		info, err := s.Info(ctx, jetstream.WithSubjectFilter(filter))
		if err != nil {
			t.Fatal(err)
		}
		for subject := range info.State.Subjects {
			h.Left = append(h.Left, "message "+subject)
		}
	}
	if kv, err := js.KeyValue(ctx, natsconn.JobsBucket); err == nil {
		if _, err := kv.Get(ctx, key); err == nil {
			h.Left = append(h.Left, "spec "+key)
		}
	}
	if _, err := js.ObjectStore(ctx, natsconn.GitBucket(key)); err == nil {
		h.Left = append(h.Left, "bucket "+natsconn.GitBucket(key))
	}
	return h
}

// cutLostWorkers cuts off the server each worker whose step asked for it,
// until the test ends.
func cutLostWorkers(t *testing.T, cuts map[string]func()) {
	for t.Context().Err() == nil {
		for name, cut := range cuts {
			if os.Remove("lost-"+name) == nil {
				cut()
			}
		}
		select {
		case <-t.Context().Done():
		case <-time.After(10 * time.Millisecond):
		}
	}
}
