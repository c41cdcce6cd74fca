package natscoord

import (
	"context"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/runnerdev/runner/internal/eventlog"
	"github.com/runnerdev/runner/internal/natsconn"
	"github.com/runnerdev/runner/internal/state"
)

// A task whose worker is lost after its first step goes on, on the next
// worker, from its second step: the first step, checkpointed by the
// coordinator, does not run again. Each step's events are recorded once,
// although the live events and the result both carry them.
func TestRedeliveredTaskGoesOnAfterItsSavedSteps(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: it waits out a lost worker's ack_wait; the conformance suite loses workers too")
	}
	srv, _, _ := serve(t)
	dir := t.TempDir()
	t.Chdir(dir)
	j := startJob(t, dir, `mode: mapreduce
map:
  input: echo x
  agent_template:
    - shell: echo one >> one.log
    - shell: 'test -e lost-once || { touch lost-once lost-$RUNNER_WORKER; exec sleep 600; }'
`)
	cuts := map[string]func(){}
	for _, name := range []string{"w1", "w2"} {
		cuts[name] = runNamedWorker(t, srv, natsconn.DefaultQueue, name)
	}
	go cutLostWorkers(t, cuts)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	r := <-runMap(ctx, j, Options{Conn: srv.Connect(t), Dist: state.Dist{Queue: natsconn.DefaultQueue}, Warn: io.Discard})
	if r.err != nil || r.sum.Items.Succeeded != 1 {
		t.Fatalf("run: %v, items %+v; want the item succeeded", r.err, r.sum.Items)
	}
	if data, _ := os.ReadFile("one.log"); string(data) != "one\n" {
		t.Errorf("the first step ran %d times, want once", strings.Count(string(data), "one"))
	}
	if err := j.Finish(state.Completed, 0, nil, nil); err != nil {
		t.Fatal(err)
	}
	events, err := eventlog.Read(j.Layout().Events, eventlog.Query{Types: []eventlog.Type{eventlog.TypeStepCompleted}})
	if err != nil {
		t.Fatal(err)
	}
	if len(events) != 2 {
		t.Errorf("%d step_completed events, want 2 (one per step): %v", len(events), events)
	}
}

// A worker of one slot whose item gives the slot back during a short
// retry delay takes it again once the delay is over, not after the 30 s
// its pull for the next task may wait (the pull holds a slot).
func TestWorkerTakesItsSlotBackAfterARetryDelay(t *testing.T) {
	srv, _, _ := serve(t)
	dir := t.TempDir()
	t.Chdir(dir)
	j := startJob(t, dir, `mode: mapreduce
map:
  input: echo x
  agent_template:
    - shell: 'test -e failed || { touch failed; exit 1; }'
      retry_config: {attempts: 2, backoff: fixed, initial_delay: 10ms}
`)
	runNamedWorker(t, srv, natsconn.DefaultQueue, "w1")
	// Well under the pull's 30 s: without the fix the item waits for it.
	ctx, cancel := context.WithTimeout(t.Context(), 15*time.Second)
	defer cancel()
	r := <-runMap(ctx, j, Options{Conn: srv.Connect(t), Dist: state.Dist{Queue: natsconn.DefaultQueue}, Warn: io.Discard})
	if r.err != nil || r.sum.Items.Succeeded != 1 {
		t.Fatalf("run: %v, items %+v; want the item succeeded at its step's second attempt", r.err, r.sum.Items)
	}
}
