package natscoord

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/runnerdev/runner/internal/natsconn"
	"github.com/runnerdev/runner/internal/natstest"
	"github.com/runnerdev/runner/internal/state"
	"github.com/runnerdev/runner/internal/testkit"
)

// checkedItems is how many items the jobs of these tests have.
const checkedItems = 3

// checkedJob starts a job whose items append their value to runs.log,
// its dispatcher checking every 200 ms, and waits until its tasks are in
// the stream (no worker pulls yet). The returned function waits, at most
// 30 s, for the job to end and checks that each item ran once.
func checkedJob(t *testing.T, srv *natstest.Server, objs *natsconn.Objects) func() {
	t.Helper()
	dir := t.TempDir()
	t.Chdir(dir)
	j := startJob(t, dir, `mode: mapreduce
map:
  input: seq 1 3
  max_parallel: 3
  agent_template:
    - shell: echo ${item} >> runs.log
`)
	ctx, cancel := context.WithTimeout(t.Context(), testkit.Scale(30*time.Second))
	done := runMap(ctx, j, Options{Conn: srv.Connect(t), Dist: state.Dist{Queue: natsconn.DefaultQueue}, Warn: io.Discard, CheckEvery: 200 * time.Millisecond})
	if !testkit.Poll(func() bool { return tasksInStream(t, objs.Tasks) == checkedItems }) {
		cancel()
		t.Fatalf("the job's %d tasks are not in the stream after 10 s", checkedItems)
	}
	return func() {
		defer cancel()
		r := <-done
		if r.err != nil || r.sum.Items.Succeeded != checkedItems {
			t.Fatalf("run: %v, items %+v; want %d succeeded", r.err, r.sum.Items, checkedItems)
		}
		if err := j.Finish(state.Completed, 0, nil, nil); err != nil {
			t.Fatal(err)
		}
		runs, _ := os.ReadFile("runs.log")
		if got := slices.Sorted(slices.Values(strings.Fields(string(runs)))); !slices.Equal(got, []string{"1", "2", "3"}) {
			t.Errorf("items run: %q, want each once", got)
		}
	}
}

// tasksInStream counts the tasks that the messages of stream s carry
// (each message a batch of them).
func tasksInStream(t *testing.T, s jetstream.Stream) int {
	t.Helper()
	info, err := s.Info(t.Context(), jetstream.WithSubjectFilter(">"))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for subject := range info.State.Subjects {
		raw, err := s.GetLastMsgForSubject(t.Context(), subject)
		if err != nil {
			continue // taken meanwhile
		}
		var b natsconn.Batch
		if err := json.Unmarshal(raw.Data, &b); err != nil {
			t.Fatal(err)
		}
		n += len(b.Tasks)
	}
	return n
}

// A job whose spec the jobs bucket lost while the streams and consumers
// stayed (no consumer is lost, so no failed pull restores it) gets it
// back from its coordinator, which makes the bucket again if it is gone;
// then a worker, which drops the tasks of a job it finds no spec of (or
// retries them while the bucket is gone), runs them, and the job ends.
func TestLostSpecIsPutBack(t *testing.T) {
	for _, lose := range []struct {
		name string
		do   func(ctx context.Context, js jetstream.JetStream, objs *natsconn.Objects, key string) error
	}{
		{"bucket", func(ctx context.Context, js jetstream.JetStream, _ *natsconn.Objects, _ string) error {
			return js.DeleteKeyValue(ctx, natsconn.JobsBucket)
		}},
		{"entry", func(ctx context.Context, _ jetstream.JetStream, objs *natsconn.Objects, key string) error {
			return objs.Jobs.Delete(ctx, key)
		}},
	} {
		t.Run(lose.name, func(t *testing.T) {
			srv, js, objs := serve(t)
			wait := checkedJob(t, srv, objs)
			keys, err := objs.Jobs.Keys(t.Context())
			if err != nil || len(keys) != 1 {
				t.Fatalf("the jobs bucket's keys: %q, %v; want the job's", keys, err)
			}
			if err := lose.do(t.Context(), js, objs, keys[0]); err != nil {
				t.Fatal(err)
			}
			if !testkit.Poll(func() bool { _, err := objs.Jobs.Get(t.Context(), keys[0]); return err == nil }) {
				t.Fatal("the job's spec is not back in the jobs bucket after 10 s")
			}
			runWorker(t, srv, natsconn.DefaultQueue)
			wait()
		})
	}
}

// A task that a worker dropped as an unknown job's (it looked while the
// spec was away: between a coordinator making the jobs bucket again and
// putting its spec back) is sent again, under a message id the stream's
// duplicate window does not hold, and the job ends.
func TestDroppedTaskIsSentAgain(t *testing.T) {
	srv, _, objs := serve(t)
	wait := checkedJob(t, srv, objs)
	tasks, err := objs.WorkerTasks(t.Context(), natsconn.DefaultQueue, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	for dropped := 0; dropped < checkedItems; {
		msg, err := tasks.Next(jetstream.FetchMaxWait(testkit.Scale(5 * time.Second)))
		if err != nil {
			t.Fatal(err)
		}
		var b natsconn.Batch
		if err := json.Unmarshal(msg.Data(), &b); err != nil {
			t.Fatal(err)
		}
		if err := msg.TermWithReason("unknown job"); err != nil {
			t.Fatal(err)
		}
		dropped += len(b.Tasks)
	}
	runWorker(t, srv, natsconn.DefaultQueue)
	wait()
}
