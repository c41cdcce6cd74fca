package natscoord

import (
	"os"
	"slices"
	"testing"
	"time"

	"github.com/runnerdev/runner/internal/eventlog"
	"github.com/runnerdev/runner/internal/natsconn"
	"github.com/runnerdev/runner/internal/testkit"
)

// A task whose worker is lost (its connection cut: no heartbeat, no beat)
// is seen as stranded, naming the worker, until the server delivers it
// again ack_wait later; the redelivery is an event naming both workers,
// and the item then runs to its end on the other worker.
func TestLostWorkersTaskIsStrandedThenRedelivered(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: it waits out a lost worker's beats and ack_wait; the conformance suite loses workers too")
	}
	srv, _, j := serveJob(t, `mode: mapreduce
map:
  input: echo 1
  agent_template:
    - shell: 'test -f released || { touch started; sleep 20; }'
`)
	var watch Watch
	cutW1 := runNamedWorker(t, srv, natsconn.DefaultQueue, "w1")
	done := startMap(t, j, 30*time.Second, Options{Conn: srv.Connect(t), Watch: &watch})
	if !testkit.Poll(func() bool { _, err := os.Stat("started"); return err == nil }) {
		t.Fatal("worker w1 did not start the item")
	}
	if s := watch.Stranded(); s.Tasks != 0 {
		t.Errorf("while w1 beats: %+v stranded, want none", s)
	}
	cutW1()
	runNamedWorker(t, srv, natsconn.DefaultQueue, "w2")
	var stranded Stranded
	if !testkit.Poll(func() bool { stranded = watch.Stranded(); return stranded.Tasks > 0 }) {
		t.Fatal("the task of the lost worker was not seen stranded")
	}
	if stranded.Tasks != 1 || !slices.Equal(stranded.Workers, []string{"w1"}) || stranded.AckWait != namedWorkersAckWait || stranded.Until.IsZero() {
		t.Errorf("stranded %+v, want 1 task of w1, ack_wait %v, with a time it is due again", stranded, namedWorkersAckWait)
	}
	if err := os.WriteFile("released", nil, 0o644); err != nil {
		t.Fatal(err)
	}
	finishSucceeded(t, j, <-done, 1)
	events, err := eventlog.Read(j.Layout().Events, eventlog.Query{Types: []eventlog.Type{eventlog.TypeTaskRedelivered}})
	if err != nil {
		t.Fatal(err)
	}
	if len(events) != 1 || events[0].Str("worker") != "w2" || events[0].Str("from_worker") != "w1" || events[0].Int("delivery") != 2 {
		t.Errorf("task_redelivered events %v, want one: delivery 2 to w2 from w1", events)
	}
}

// The status line reads the outage while the streams' watch clears it:
// a read never finds it gone halfway.
func TestWatchOutageWhileCleared(t *testing.T) {
	var (
		d     Dispatcher
		watch Watch
	)
	watch.set(&d)
	o := natsconn.Outage{Stream: natsconn.TasksStream, Since: time.Now()}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range 200_000 {
			d.outage.Store(&o)
			d.outage.Store(nil)
		}
	}()
	for {
		select {
		case <-done:
			return
		default:
			if got := watch.Outage(); got.Down() && got.Stream != o.Stream {
				t.Fatalf("outage %+v", got)
			}
		}
	}
}
