package natscoord

import (
	"fmt"
	"io"
	"slices"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/runnerdev/runner/internal/dispatchtest"
	"github.com/runnerdev/runner/internal/natsconn"
	"github.com/runnerdev/runner/internal/state"
	"github.com/runnerdev/runner/internal/testkit"
)

// A job's results leave the results stream when it ends: acknowledged,
// and the job's subject purged (a work-queue stream keeps the messages a
// deleted consumer did not acknowledge).
func TestJobLeavesNoResults(t *testing.T) {
	const items = 20
	srv, objs, j := serveJob(t, fmt.Sprintf("mode: mapreduce\nmap:\n  input: seq 1 %d\n  max_parallel: 8\n  agent_template:\n    - shell: \"true\"\n", items))
	runWorker(t, srv, natsconn.DefaultQueue)
	finishSucceeded(t, j, <-startMap(t, j, time.Minute, Options{Conn: srv.Connect(t)}), items)
	if st := streamState(t, objs.Results); st.Msgs != 0 {
		t.Errorf("the results stream holds %d results after the job, want 0", st.Msgs)
	}
}

// Close has the acknowledgements handed over confirmed before it deletes
// the job's consumer: one the server has not confirmed yet holds the
// deletion back. (TestJobLeavesNoResults cannot see the order: the
// acknowledgements go out as the results are recorded, long before the
// job ends.)
func TestCloseConfirmsAcksBeforeTheConsumerGoes(t *testing.T) {
	srv, _, j := serveJob(t, "mode: mapreduce\nmap:\n  input: echo x\n  agent_template:\n    - shell: \"true\"\n")
	opened, err := New(Options{Conn: srv.Connect(t), Dist: state.Dist{Queue: natsconn.DefaultQueue}, Warn: io.Discard}).Open(t.Context(), viewOf(t, j), &refusingHost{Host: &dispatchtest.Host{}, job: j})
	if err != nil {
		t.Fatal(err)
	}
	d := opened.(*Dispatcher)
	log := &ackLog{}
	tap := srv.Connect(t)
	if _, err := tap.Subscribe("$JS.API.CONSUMER.DELETE."+natsconn.ResultsStream+"."+natsconn.JobConsumer(d.key), func(*nats.Msg) { log.add("consumer deleted") }); err != nil {
		t.Fatal(err)
	}
	if err := tap.Flush(); err != nil {
		t.Fatal(err)
	}
	held := heldMsg("r", log)
	d.acks.add(held)
	closed := make(chan error, 1)
	go func() { closed <- d.Close() }()
	// A deletion that does not wait for the confirmation comes within
	// moments of Close.
	for i := 0; i < 50 && len(log.copy()) == 0; i++ {
		time.Sleep(20 * time.Millisecond)
	}
	close(held.release)
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
	want := []string{"confirmed r", "consumer deleted"}
	if !testkit.Poll(func() bool { return len(log.copy()) == len(want) }) || !slices.Equal(log.copy(), want) {
		t.Errorf("%q, want %q", log.copy(), want)
	}
}
