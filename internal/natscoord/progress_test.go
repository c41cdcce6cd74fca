package natscoord

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/runnerdev/runner/internal/dispatchtest"
	"github.com/runnerdev/runner/internal/eventlog"
	"github.com/runnerdev/runner/internal/itemtask"
	"github.com/runnerdev/runner/internal/itemtask/remote"
	"github.com/runnerdev/runner/internal/job"
	"github.com/runnerdev/runner/internal/natsconn"
	"github.com/runnerdev/runner/internal/natstest"
	"github.com/runnerdev/runner/internal/natsworker"
	"github.com/runnerdev/runner/internal/state"
	"github.com/runnerdev/runner/internal/testkit"
)

// A task whose worker is lost after its first step goes on, on the next
// worker, from its second step: the first step, checkpointed by the
// coordinator, does not run again. Each step's events are recorded once,
// although the live events and the result both carry them.
func TestRedeliveredTaskGoesOnAfterItsSavedSteps(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: it waits out a lost worker's ack_wait; the conformance suite loses workers too")
	}
	srv, _, j := serveJob(t, `mode: mapreduce
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
	finishSucceeded(t, j, <-startMap(t, j, time.Minute, Options{Conn: srv.Connect(t)}), 1)
	if data, _ := os.ReadFile("one.log"); string(data) != "one\n" {
		t.Errorf("the first step ran %d times, want once", strings.Count(string(data), "one"))
	}
	events, err := eventlog.Read(j.Layout().Events, eventlog.Query{Types: []eventlog.Type{eventlog.TypeStepCompleted}})
	if err != nil {
		t.Fatal(err)
	}
	if len(events) != 2 {
		t.Errorf("%d step_completed events, want 2 (one per step): %v", len(events), events)
	}
}

// failsOnce is the workflow of one item, x, whose step fails once and
// succeeds after its retry delay.
func failsOnce(delay string) string {
	return `mode: mapreduce
map:
  input: echo x
  agent_template:
    - shell: 'test -e failed || { touch failed; exit 1; }'
      retry_config: {attempts: 2, backoff: fixed, initial_delay: ` + delay + `}
`
}

// A worker of one slot whose item gives the slot back during a short
// retry delay takes it again once the delay is over, not after the 30 s
// its pull for the next task may wait (the pull holds a slot).
func TestWorkerTakesItsSlotBackAfterARetryDelay(t *testing.T) {
	srv, _, j := serveJob(t, failsOnce("10ms"))
	runNamedWorker(t, srv, natsconn.DefaultQueue, "w1")
	// Well under the pull's 30 s: without the fix the item waits for it.
	r := <-startMap(t, j, 15*time.Second, Options{Conn: srv.Connect(t)})
	if r.err != nil || r.sum.Items.Succeeded != 1 {
		t.Fatalf("run: %v, items %+v; want the item succeeded at its step's second attempt", r.err, r.sum.Items)
	}
}

// A task whose saved steps would make it too large for NATS goes without
// them (its worker asks for them at its start), not as an item too large.
func TestTaskBodyLeavesOutCheckpointsTooLarge(t *testing.T) {
	task := natsconn.Task{JobID: "j", Item: json.RawMessage(`"x"`), Checkpoints: []state.StepRecord{{Index: 0, Output: strings.Repeat("o", natsconn.MaxTask)}}}
	body, err := taskBody(task)
	if err != nil || len(body) > natsconn.MaxTask || strings.Contains(string(body), "checkpoints") {
		t.Errorf("body of %d bytes (%v), want one under %d without checkpoints", len(body), err, natsconn.MaxTask)
	}
	task.Checkpoints[0].Output = "o"
	if body, _ := taskBody(task); !strings.Contains(string(body), "checkpoints") {
		t.Errorf("body %s, want its checkpoints", body)
	}
}

// A delivery that starts while the task's slot is given back (the run
// before it was lost during a retry delay) is answered only once the
// job's slot is held again: two runs of the job never hold one slot.
func TestRunAfterALostDelayWaitsForTheSlot(t *testing.T) {
	srv := natstest.Start(t)
	h := &slotHost{acquiring: make(chan struct{}), grant: make(chan struct{})}
	tr := serveProgress(t, srv.Connect(t), h)
	p := tr.Track(t.Context(), itemtask.Task{Index: 1, Attempt: 1, DispatchID: "d", Checkpoints: []state.StepRecord{{Index: 0}}}, nil)
	defer tr.Untrack(p)
	worker := srv.Connect(t)
	release, _ := json.Marshal(remote.Msg{Kind: remote.KindRelease, Run: remote.Run{Index: 1, Attempt: 1, Delivery: 1}})
	if err := worker.Publish(natsconn.ProgressSubject("k"), release); err != nil {
		t.Fatal(err)
	}
	answered := make(chan *nats.Msg, 1)
	go func() {
		start, _ := json.Marshal(remote.Msg{Kind: remote.KindStart, Run: remote.Run{Index: 1, Attempt: 1, Delivery: 2}})
		msg, _ := worker.Request(natsconn.ProgressSubject("k"), start, time.Minute)
		answered <- msg
	}()
	select {
	case <-h.acquiring:
	case msg := <-answered:
		t.Fatalf("the start was answered (%v) without the job's slot taken again", msg)
	case <-time.After(testkit.Scale(time.Minute)):
		t.Fatal("the start neither took the slot nor was answered")
	}
	close(h.grant)
	msg := <-answered
	var reply remote.Reply
	if msg == nil || json.Unmarshal(msg.Data, &reply) != nil || reply.Error != "" || len(reply.Checkpoints) != 1 {
		t.Errorf("start answered %v, want the task's checkpoint once the slot is held", msg)
	}
}

// Once the job is interrupted, a run whose dispatch is over is stopped
// when it asks for the job's slot back after a delay, rather than told to
// go on as if no coordinator knew it: it would run its next step without
// a slot until its worker hears of the interrupt, which stops it midway
// (the step then runs again on resume).
func TestRunOfAnInterruptedJobDoesNotGoOn(t *testing.T) {
	srv := natstest.Start(t)
	tr := serveProgress(t, srv.Connect(t), &slotHost{})
	p := tr.Track(t.Context(), itemtask.Task{Index: 1, Attempt: 1, DispatchID: "d"}, nil)
	tr.Interrupt()
	tr.Untrack(p)
	acquire, _ := json.Marshal(remote.Msg{Kind: remote.KindAcquire, Run: remote.Run{Index: 1, Attempt: 1, Epoch: 1, Delivery: 1}})
	msg, err := srv.Connect(t).Request(natsconn.ProgressSubject("k"), acquire, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	var reply remote.Reply
	if json.Unmarshal(msg.Data, &reply) != nil || reply.Unknown || reply.Error == "" || reply.Term {
		t.Errorf("acquire after the interrupt answered %s, want the run stopped, its task kept", msg.Data)
	}
}

// slotHost is a Host of one slot, given back at once and taken again
// only when grant is closed; acquiring is closed when that starts. The
// rest of the Host is not used.
type slotHost struct {
	itemtask.Host
	acquiring, grant chan struct{}
}

func (h *slotHost) Slot(string) itemtask.Slot { return h }

func (h *slotHost) Release() {}

func (h *slotHost) Acquire(ctx context.Context) error {
	close(h.acquiring)
	select {
	case <-h.grant:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// The runs of a task are told apart by their publication and delivery: a
// task sent again (the server lost it) runs after every delivery of the
// message before, although the server counts its deliveries from 1 again;
// a run older than the newest heard from is refused and not saved.
func TestTaskSentAgainRunsAfterEarlierDeliveries(t *testing.T) {
	srv := natstest.Start(t)
	h := &stepHost{}
	tr := serveProgress(t, srv.Connect(t), h)
	p := tr.Track(t.Context(), itemtask.Task{Index: 1, Attempt: 1, DispatchID: "d"}, nil)
	defer tr.Untrack(p)
	worker := srv.Connect(t)
	save := func(sent, delivery int) remote.Reply {
		t.Helper()
		body, _ := json.Marshal(remote.Msg{Kind: remote.KindCheckpoint, Run: remote.Run{Index: 1, Attempt: 1, Epoch: 1, Sent: sent, Delivery: delivery}, Step: &state.StepRecord{Index: sent*10 + delivery}})
		msg, err := worker.Request(natsconn.ProgressSubject("k"), body, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		var reply remote.Reply
		if err := json.Unmarshal(msg.Data, &reply); err != nil {
			t.Fatal(err)
		}
		return reply
	}
	if r := save(0, 2); r.Error != "" {
		t.Fatalf("delivery 2 refused: %s", r.Error)
	}
	if r := save(1, 1); r.Error != "" {
		t.Errorf("the task sent again, delivery 1, refused: %s", r.Error)
	}
	if r := save(0, 2); r.Error == "" || r.Term {
		t.Errorf("delivery 2 of the first message answered %+v after the task was sent again; want refused, its task kept", r)
	}
	if got := h.steps(); got != "2,11" {
		t.Errorf("steps saved %s, want 2,11", got)
	}
}

// stepHost is a Host that records the steps saved. The rest of the Host
// is not used.
type stepHost struct {
	itemtask.Host
	mu    sync.Mutex
	saved []string
}

func (h *stepHost) Checkpoint(_ string, rec state.StepRecord) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.saved = append(h.saved, strconv.Itoa(rec.Index))
	return nil
}

func (h *stepHost) steps() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return strings.Join(h.saved, ",")
}

// A run whose step the coordinator refuses (its dispatch is no longer its
// item's) stops before its next step, and its worker drops the task: the
// server does not deliver it again.
func TestRefusedRunDropsItsTask(t *testing.T) {
	srv, objs, j := serveJob(t, `mode: mapreduce
map:
  input: echo x
  agent_template:
    - shell: echo one
    - shell: touch second-ran
`)
	runNamedWorker(t, srv, natsconn.DefaultQueue, "w1")
	h := &refusingHost{Host: &dispatchtest.Host{Refuse: itemtask.ErrStale}, job: j}
	ctx, cancel := context.WithTimeout(t.Context(), testkit.Scale(time.Minute))
	defer cancel()
	d, err := New(Options{Conn: srv.Connect(t), Dist: state.Dist{Queue: natsconn.DefaultQueue}, Warn: io.Discard}).Open(ctx, viewOf(t, j), h)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	item, _ := json.Marshal("x")
	if out, err := d.Dispatch(ctx, itemtask.Task{JobID: j.ID(), Index: 0, ItemID: "x", Item: item, Attempt: 1, DispatchID: "x.1", Seed: j.Seed()}); !errors.Is(err, itemtask.ErrStale) {
		t.Fatalf("Dispatch = %+v, %v; want the refusal", out, err)
	}
	if !testkit.Poll(func() bool { return streamState(t, objs.Tasks).Msgs == 0 }) {
		t.Error("the refused run's task is still in the stream: it would run again")
	}
	if _, err := os.Stat("second-ran"); err == nil {
		t.Error("the step after the refused one ran")
	}
}

// refusingHost is dispatchtest's Host, refusing checkpoints, with the
// job's metadata to take an epoch in.
type refusingHost struct {
	*dispatchtest.Host
	job *job.Job
}

func (h *refusingHost) UpdateMeta(fn func(*state.Meta)) error { return h.job.UpdateMeta(fn) }

// A worker with --idle-exit whose only run waits out a retry delay is not
// idle: it goes on pulling, and takes a task that comes meanwhile. (It
// starts once x's task is there: one started before could be idle for
// longer than its idle exit while the job starts on a loaded machine.)
func TestWorkerWithARunInADelayIsNotIdle(t *testing.T) {
	srv, objs, first := serveJob(t, failsOnce(testkit.Scale(1500*time.Millisecond).String()))
	ctx, cancel := context.WithTimeout(t.Context(), testkit.Scale(time.Minute))
	defer cancel()
	opts := Options{Conn: srv.Connect(t), Dist: state.Dist{Queue: natsconn.DefaultQueue}, Warn: io.Discard}
	a := runMap(ctx, first, opts)
	testkit.Eventually(t, func() bool { return streamState(t, objs.Tasks).Msgs == 1 }, "x's task published")
	idleExit := testkit.Scale(200 * time.Millisecond)
	w, err := natsworker.NewWorker(t.Context(), natsworker.WorkerOptions{Conn: srv.Connect(t), Queue: natsconn.DefaultQueue, Concurrency: 1, Name: "w1",
		AckWait: testkit.Scale(natsconn.DefaultAckWait), IdleExit: idleExit, StoreDir: t.TempDir(), Log: io.Discard, Open: openPortable("w1")})
	if err != nil {
		t.Fatal(err)
	}
	wctx, stopWorker := context.WithCancel(t.Context())
	stopped := make(chan error, 1)
	go func() { stopped <- w.Run(wctx) }()
	defer func() { stopWorker(); <-stopped }()
	testkit.Eventually(t, func() bool { _, err := os.Stat("failed"); return err == nil }, "item x failed its first attempt")
	time.Sleep(testkit.Scale(500 * time.Millisecond)) // past the idle exit, within x's delay
	second := startJob(t, t.TempDir(), "mode: mapreduce\nmap:\n  input: echo b\n  agent_template:\n    - shell: touch b-ran\n")
	b := runMap(ctx, second, opts)
	for name, done := range map[string]<-chan ran{"x": a, "b": b} {
		if r := <-done; r.err != nil || r.sum.Items.Succeeded != 1 {
			t.Errorf("job of item %s: %v, items %+v; want it succeeded on the worker", name, r.err, r.sum.Items)
		}
	}
}

// serveProgress is the tracker of the runs of job "k" a dispatcher
// serves on conn, until the test ends.
func serveProgress(t *testing.T, conn *nats.Conn, h itemtask.Host) *remote.Tracker {
	tr := remote.NewTracker(h, nil)
	sub, err := natsconn.ServeProgress(conn, "k", tr.Receive)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.Unsubscribe() })
	return tr
}
