package natscoord

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/runnerdev/runner/dlq"
	"github.com/runnerdev/runner/internal/eventlog"
	"github.com/runnerdev/runner/internal/itemrun"
	"github.com/runnerdev/runner/internal/itemtask"
	"github.com/runnerdev/runner/internal/job"
	"github.com/runnerdev/runner/internal/jobdlq"
	"github.com/runnerdev/runner/internal/natsconn"
	"github.com/runnerdev/runner/internal/natstest"
	"github.com/runnerdev/runner/internal/natsworker"
	"github.com/runnerdev/runner/internal/state"
	"github.com/runnerdev/runner/internal/testkit"
	"github.com/runnerdev/runner/mapreduce"
	"github.com/runnerdev/runner/workflow"
)

// The unit paths of §11.9.10, against an in-process server.

// serve connects to a new server and opens runner's objects there.
func serve(t *testing.T) (*natstest.Server, jetstream.JetStream, *natsconn.Objects) {
	t.Helper()
	srv := natstest.Start(t)
	js, err := jetstream.New(srv.Connect(t))
	if err != nil {
		t.Fatal(err)
	}
	objs, err := natsconn.OpenObjects(t.Context(), js, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	return srv, js, objs
}

// serveJob connects to a new server, opens runner's objects there and
// starts a job of the workflow file in a new directory, which becomes the
// working directory.
func serveJob(t *testing.T, file string) (*natstest.Server, *natsconn.Objects, *job.Job) {
	t.Helper()
	srv, _, objs := serve(t)
	dir := jobDir(t)
	return srv, objs, startJob(t, dir, file)
}

// jobDir makes a new directory for a job's state, which becomes the
// working directory, and returns it.
func jobDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	t.Chdir(dir)
	return dir
}

// heldItems is the workflow of items 1..n, parallel at a time, each of
// which touches dir/started.<item> and then waits (at most waits times
// 10 ms, then it fails) until dir/go is there.
func heldItems(dir string, n, parallel, waits int) string {
	return fmt.Sprintf(`mode: mapreduce
map:
  input: seq 1 %[1]d
  max_parallel: %[2]d
  agent_template:
    - shell: |
        touch %[4]s/started.${item}
        for i in $(seq %[3]d); do [ -e %[4]s/go ] && exit 0; sleep 0.01; done
        exit 9
`, n, parallel, waits, dir)
}

// runWorker runs a worker of queue q until the test ends.
func runWorker(t *testing.T, srv *natstest.Server, q string) {
	t.Helper()
	runNamedWorker(t, srv, q, "w")
}

// namedWorkersAckWait is the ack_wait of runNamedWorker's workers.
var namedWorkersAckWait = testkit.Scale(2 * time.Second)

// runNamedWorker runs a worker of queue q named name until the test ends,
// on a connection of its own; the returned function cuts it off the
// server (closes that connection).
func runNamedWorker(t *testing.T, srv *natstest.Server, q, name string) (cut func()) {
	t.Helper()
	nc := srv.Connect(t)
	runWorkerWith(t, natsworker.WorkerOptions{Conn: nc, Queue: q, Concurrency: 1, Name: name, AckWait: namedWorkersAckWait, StoreDir: t.TempDir(), Log: io.Discard, Open: openPortable(name)})
	return nc.Close
}

// runWorkerWith runs a worker of opts until the test ends.
func runWorkerWith(t *testing.T, opts natsworker.WorkerOptions) {
	t.Helper()
	w, err := natsworker.NewWorker(t.Context(), opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- w.Run(ctx) }()
	t.Cleanup(func() { stop(); <-done })
}

// openPortable opens jobs as the worker name does (WorkerOptions.Open).
func openPortable(name string) func(context.Context, json.RawMessage, string, func(eventlog.Event), *itemtask.Live) (itemtask.Opened, error) {
	return func(ctx context.Context, p json.RawMessage, dir string, emit func(eventlog.Event), live *itemtask.Live) (itemtask.Opened, error) {
		return itemrun.OpenPortable(ctx, p, dir, name, emit, live)
	}
}

// startJob starts job j of the workflow file with its state in dir.
func startJob(t *testing.T, dir, file string) *job.Job {
	t.Helper()
	wf, err := workflow.Parse("w.yml", []byte(file))
	if err != nil {
		t.Fatal(err)
	}
	j, err := job.Start(wf, []byte(file), job.Options{Store: state.Store{Dir: filepath.Join(dir, ".runner")}, JobID: "j", Stdout: io.Discard, Stderr: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	return j
}

// ran is how a job's map run ended.
type ran struct {
	sum mapreduce.Summary
	err error
}

// runMap runs job j's map with a dispatcher of opts until it ends or ctx
// does, and says how it ended.
func runMap(ctx context.Context, j *job.Job, opts Options) <-chan ran {
	done := make(chan ran, 1)
	go func() {
		sum, err := mapreduce.Run(ctx, j, mapreduce.Options{
			Dispatcher: New(opts),
			DLQ:        jobdlq.Open(ctx, "j", j.Layout().DLQ, io.Discard),
		})
		done <- ran{sum, err}
	}()
	return done
}

// startMap runs job j's map for at most within, with a dispatcher of
// opts, by default on the default queue, its warnings discarded.
func startMap(t *testing.T, j *job.Job, within time.Duration, opts Options) <-chan ran {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), testkit.Scale(within))
	t.Cleanup(cancel)
	if opts.Dist.Queue == "" {
		opts.Dist.Queue = natsconn.DefaultQueue
	}
	if opts.Warn == nil {
		opts.Warn = io.Discard
	}
	return runMap(ctx, j, opts)
}

// finishSucceeded checks that the map run r of job j ended with its n
// items succeeded, and finishes j.
func finishSucceeded(t *testing.T, j *job.Job, r ran, n int) {
	t.Helper()
	if r.err != nil || r.sum.Items.Succeeded != n {
		t.Fatalf("run: %v, items %+v; want %d succeeded", r.err, r.sum.Items, n)
	}
	if err := j.Finish(state.Completed, 0, nil, nil); err != nil {
		t.Fatal(err)
	}
}

func streamState(t *testing.T, s jetstream.Stream) jetstream.StreamState {
	t.Helper()
	info, err := s.Info(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return info.State
}

func consumerInfo(t *testing.T, js jetstream.JetStream, stream, name string) *jetstream.ConsumerInfo {
	t.Helper()
	c, err := js.Consumer(t.Context(), stream, name)
	if err != nil {
		t.Fatal(err)
	}
	info, err := c.Info(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return info
}

// A task in a protocol this worker does not speak stays in the stream for
// a worker that does, and comes back only after 5 s, not in a tight loop.
func TestWorkerLeavesUnknownProtocol(t *testing.T) {
	t.Parallel()
	srv, js, objs := serve(t)
	runWorker(t, srv, "q")
	m := natsconn.NewMsg(natsconn.TaskSubject("q", natsconn.NewJobKey("j"), "1-1"), "j", []byte(`{"job_id":"j"}`))
	m.Header.Set(natsconn.HeaderProto, "99")
	if err := natsconn.Publish(t.Context(), js, m, "t.future"); err != nil {
		t.Fatal(err)
	}
	if !testkit.Poll(func() bool { return consumerInfo(t, js, natsconn.TasksStream, "workers_q").Delivered.Consumer > 0 }) {
		t.Fatal("the worker never pulled the task")
	}
	time.Sleep(time.Second) // the scenario: a second in which a tight loop would deliver it again
	if st := streamState(t, objs.Tasks); st.Msgs != 1 {
		t.Errorf("the stream holds %d tasks, want the unknown one kept", st.Msgs)
	}
	if c := consumerInfo(t, js, natsconn.TasksStream, "workers_q"); c.Delivered.Consumer != 1 {
		t.Errorf("the task was delivered %d times within a second, want once (NakWithDelay 5s)", c.Delivered.Consumer)
	}
}

// A task of a job with no spec in RUNNER_JOBS (it ended, or never was)
// is dropped without a run or a result.
func TestWorkerDropsTaskOfUnknownJob(t *testing.T) {
	t.Parallel()
	srv, js, objs := serve(t)
	runWorker(t, srv, "q")
	key := natsconn.NewJobKey("gone")
	body, _ := json.Marshal(natsconn.Batch{Tasks: []natsconn.Task{{JobID: "gone", Index: 0, ItemID: "1", Attempt: 1, Epoch: 1, Item: json.RawMessage(`"1"`), MaxDeliveries: 4}}})
	if err := natsconn.Publish(t.Context(), js, natsconn.NewMsg(natsconn.TaskSubject("q", key, "1-1"), "gone", body), natsconn.TaskMsgID(key, "1-1")); err != nil {
		t.Fatal(err)
	}
	if !testkit.Poll(func() bool { return streamState(t, objs.Tasks).Msgs == 0 }) {
		t.Fatal("the task of an unknown job is still in the stream after 10s")
	}
	if st := streamState(t, objs.Results); st.LastSeq != 0 {
		t.Errorf("%d results were published for a job nobody runs", st.LastSeq)
	}
}

// A task published again under its message id within the duplicate
// window is stored once; another epoch's id is a new task.
func TestRepublishedTaskIsStoredOnce(t *testing.T) {
	t.Parallel()
	_, js, objs := serve(t)
	key := natsconn.NewJobKey("j")
	body, _ := json.Marshal(natsconn.Batch{Tasks: []natsconn.Task{{JobID: "j", Index: 3, ItemID: "4", Attempt: 1, Epoch: 1, Item: json.RawMessage(`"4"`), MaxDeliveries: 4}}})
	for _, epoch := range []int{1, 1, 2} {
		batch := natsconn.BatchName(epoch, 1)
		if err := natsconn.Publish(t.Context(), js, natsconn.NewMsg(natsconn.TaskSubject("q", key, batch), "j", body), natsconn.TaskMsgID(key, batch)); err != nil {
			t.Fatal(err)
		}
	}
	if st := streamState(t, objs.Tasks); st.Msgs != 2 {
		t.Errorf("the stream holds %d tasks, want 2 (epoch 1 once, epoch 2)", st.Msgs)
	}
}

// An acknowledgement whose confirmation never comes (a restarted server
// that forgot the delivery) gives up at its deadline instead of hanging.
func TestAckGivesUpWhenNoConfirmationComes(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: it waits out the acknowledgement's deadline")
	}
	t.Parallel()
	srv, js, _ := serve(t)
	ctx := t.Context()
	s, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "S", Subjects: []string{"s"}})
	if err != nil {
		t.Fatal(err)
	}
	c, err := s.CreateConsumer(ctx, jetstream.ConsumerConfig{Durable: "C", AckPolicy: jetstream.AckExplicitPolicy})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := js.Publish(ctx, "s", []byte("x")); err != nil {
		t.Fatal(err)
	}
	msg, err := c.Next(jetstream.FetchMaxWait(testkit.Scale(5 * time.Second)))
	if err != nil {
		t.Fatal(err)
	}
	// The consumer goes; someone takes its acks and never answers.
	if err := s.DeleteConsumer(ctx, "C"); err != nil {
		t.Fatal(err)
	}
	silent := srv.Connect(t)
	if _, err := silent.Subscribe("$JS.ACK.S.C.>", func(*nats.Msg) {}); err != nil {
		t.Fatal(err)
	}
	if err := silent.Flush(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- natsconn.Ack(context.Background(), msg) }()
	select {
	case err := <-done:
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("ack: %v, want its deadline exceeded", err)
		}
	case <-time.After(testkit.Scale(4 * natsconn.AckDeadline)):
		t.Fatal("ack still waits for a confirmation that never comes")
	}
}

// An item whose task would not fit in a NATS message fails as kind spawn
// before anything is published, and the error policy takes it (the DLQ).
func TestOversizedItemFailsAsSpawn(t *testing.T) {
	srv, _, objs := serve(t)
	dir := t.TempDir()
	t.Chdir(dir)
	big, _ := json.Marshal([]map[string]string{{"id": "big", "blob": strings.Repeat("x", natsconn.MaxPayload)}, {"id": "small", "blob": "x"}})
	if err := os.WriteFile("items.json", big, 0o600); err != nil {
		t.Fatal(err)
	}
	const file = `mode: mapreduce
map:
  input: items.json
  json_path: "$[*]"
  item_id: "${item.id}"
  agent_template:
    - shell: "true"
`
	j := startJob(t, dir, file)
	runWorker(t, srv, natsconn.DefaultQueue)
	ctx, cancel := context.WithTimeout(t.Context(), testkit.Scale(time.Minute))
	defer cancel()
	sum, err := mapreduce.Run(ctx, j, mapreduce.Options{
		Dispatcher: New(Options{Conn: srv.Connect(t), Dist: state.Dist{Queue: natsconn.DefaultQueue}}),
		DLQ:        jobdlq.Open(ctx, "j", j.Layout().DLQ, io.Discard),
	})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Items.Succeeded != 1 || sum.Items.Failed != 1 {
		t.Errorf("items %+v, want the small one succeeded and the big one failed", sum.Items)
	}
	if err := j.Finish(state.Completed, 3, nil, nil); err != nil {
		t.Fatal(err)
	}
	if st := streamState(t, objs.Tasks); st.LastSeq != 1 {
		t.Errorf("%d tasks were published, want only the small item's", st.LastSeq)
	}
	d, err := dlq.Open(j.Layout().DLQ, dlq.Options{ReadOnly: true, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	var failures []dlq.Failure
	if err := d.List(func(it dlq.Item) bool { failures = append(failures, it.Failures...); return true }); err != nil {
		t.Fatal(err)
	}
	if len(failures) != 1 || failures[0].Kind != "spawn" || !strings.Contains(failures[0].Message, "item too large for NATS max_payload") {
		t.Errorf("DLQ failures %+v, want the big item's, of kind spawn, saying it is too large", failures)
	}
}

// A result over the size limit loses its log tail first (but for a line
// saying so), then its events' messages, then its events; its output and
// failure stay.
func TestResultTrim(t *testing.T) {
	event := eventlog.Event{Type: eventlog.TypeStepFailed, Fields: map[string]any{"message": strings.Repeat("m", 200<<10)}}
	r := natsconn.Result{Index: 1, Output: "out", Failed: true, Failure: &itemtask.Failure{Kind: "exit", Message: "boom"},
		LogTail: strings.Repeat("l", natsconn.MaxLogTail), Events: []eventlog.Event{event, event, event, event, event}}
	body, err := r.Trim()
	if err != nil {
		t.Fatal(err)
	}
	var got natsconn.Result
	if err := json.Unmarshal(body, &got); err != nil {
		t.Fatal(err)
	}
	leftOut := strings.HasPrefix(got.LogTail, "[runner: this attempt's output (its last 262144 bytes) left out") && len(got.LogTail) < 200
	if len(body) > natsconn.MaxResult || !leftOut || len(got.Events) != 5 || got.Events[0].Str("message") != "" {
		t.Errorf("trimmed to %d bytes, log tail %q, %d events (first message %d bytes); want under %d, the log tail's note, 5 events without messages",
			len(body), got.LogTail, len(got.Events), len(got.Events[0].Str("message")), natsconn.MaxResult)
	}
	if got.Output != "out" || got.Failure == nil || got.Failure.Message != "boom" {
		t.Errorf("trimming lost the output or the failure: %+v", got)
	}
	quiet := natsconn.Result{Index: 1, Events: []eventlog.Event{event, event, event, event, event}}
	if body, _ := quiet.Trim(); strings.Contains(string(body), "log_tail") {
		t.Errorf("a result without a log tail was given one: %.200s", body)
	}
	small := natsconn.Result{Index: 1, LogTail: "tail"}
	if body, _ := small.Trim(); !strings.Contains(string(body), `"tail"`) {
		t.Errorf("a small result was trimmed: %s", body)
	}
}
