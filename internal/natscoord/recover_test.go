package natscoord

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/runnerdev/runner/internal/eventlog"
	"github.com/runnerdev/runner/internal/itemtask"
	"github.com/runnerdev/runner/internal/itemtask/remote"
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

// recoverWorkflow's items append their value to runs.log when they run.
const recoverWorkflow = `mode: mapreduce
map:
  input: seq 1 3
  max_parallel: 3
  agent_template:
    - shell: echo ${item} >> runs.log
`

// stuck is a dispatcher whose tasks never end: the process running the
// job dies (its context ends) with every item recorded running. Each
// task it is given is told on started (never waited for).
type stuck struct{ started chan<- struct{} }

func (s stuck) Dispatch(ctx context.Context, _ itemtask.Task) (itemtask.Outcome, error) {
	select {
	case s.started <- struct{}{}:
	default:
	}
	<-ctx.Done()
	return itemtask.Outcome{}, ctx.Err()
}

func (stuck) Recorded(context.Context, string) {}
func (stuck) Close() error                     { return nil }

// A resumed job's items that an ended process left running are settled
// from what NATS still holds, in the order of §11.7, so that none runs
// twice: item 1's task is still in the stream (adopted: a worker runs it
// once, nothing is published again); item 2's result was stored and
// delivered to the ended process, which did not record it (read from the
// stream: it does not run again); item 3 has neither (published again).
// The ended process had recorded the first two events of item 1's run
// live: they are not recorded again with its result.
func TestResumeAdoptsTasksAndReadsResults(t *testing.T) {
	srv := natstest.Start(t)
	dir := t.TempDir()
	t.Chdir(dir)
	store := state.Store{Dir: filepath.Join(dir, ".runner")}
	wf, err := workflow.Parse("recover.yml", []byte(recoverWorkflow))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()

	// The first process starts all three items and dies.
	j, err := job.Start(wf, []byte(recoverWorkflow), job.Options{Store: store, JobID: "j", Stdout: io.Discard, Stderr: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	// It dies once the three were given to its dispatcher, each recorded
	// running before (a fixed time was too short for that on a loaded
	// machine).
	dead, die := context.WithCancel(ctx)
	started := make(chan struct{}, 3)
	go func() {
		for range 3 {
			<-started
		}
		die()
	}()
	_, err = mapreduce.Run(dead, j, mapreduce.Options{
		Dispatcher: itemtask.Backend{Open: func(context.Context, itemtask.Job, itemtask.Host) (itemtask.Dispatcher, error) {
			return stuck{started}, nil
		}},
		DLQ: jobdlq.Open(ctx, "j", j.Layout().DLQ, io.Discard),
	})
	if err == nil {
		t.Fatal("the first process's map ended")
	}
	if err := j.Finish(state.Interrupted, 130, err, nil); err != nil {
		t.Fatal(err)
	}

	recordLive(t, j.Layout().Events, "1", remote.RunID{Epoch: 1, Delivery: 1}, 2)

	// What it left on NATS: the job's spec, item 1's task, item 2's
	// result delivered to it and not acknowledged. (The worker may run
	// item 1 before the resume looks: then its result is taken instead
	// of its task adopted; either way it runs once.)
	nc := srv.Connect(t)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	objs, err := natsconn.OpenObjects(ctx, js, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	rec, err := nextEpoch(j.UpdateMeta, state.Dist{Queue: natsconn.DefaultQueue, Key: natsconn.NewJobKey("j")})
	if err != nil {
		t.Fatal(err)
	}
	key := rec.Key
	ended := &Dispatcher{j: viewOf(t, j), objs: objs, queue: natsconn.DefaultQueue, key: key, maxDel: natsconn.DefaultMaxDeliveries, version: "test"}
	if err := ended.putSpec(ctx, natsconn.StatusRunning); err != nil {
		t.Fatal(err)
	}
	body, _ := json.Marshal(natsconn.Batch{Tasks: []natsconn.Task{{JobID: "j", Index: 0, ItemID: "1", Attempt: 1, Epoch: 1, Item: json.RawMessage(`"1"`), MaxDeliveries: 4}}})
	if err := natsconn.Publish(ctx, js, natsconn.NewMsg(natsconn.TaskSubject(natsconn.DefaultQueue, key, "1-1"), "j", body), natsconn.TaskMsgID(key, "1-1")); err != nil {
		t.Fatal(err)
	}
	body, _ = json.Marshal(natsconn.Result{Index: 1, Attempt: 1, Epoch: 1, Worker: "gone", Delivery: 1, Output: "2\n"})
	if err := natsconn.Publish(ctx, js, natsconn.NewMsg(natsconn.ResultSubject(key, 1), "j", body), natsconn.ResultMsgID(key, 1, 1, 1)); err != nil {
		t.Fatal(err)
	}
	results, err := objs.JobResults(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := results.Next(jetstream.FetchMaxWait(testkit.Scale(5 * time.Second))); err != nil {
		t.Fatalf("delivering item 2's result to the ended process: %v", err)
	}

	// The second process resumes with a worker.
	w, err := natsworker.NewWorker(ctx, natsworker.WorkerOptions{Conn: srv.Connect(t), Queue: natsconn.DefaultQueue, Concurrency: 3, Name: "w", AckWait: testkit.Scale(natsconn.DefaultAckWait), StoreDir: t.TempDir(), Log: io.Discard, Open: openPortable("w")})
	if err != nil {
		t.Fatal(err)
	}
	wctx, stopWorker := context.WithCancel(ctx)
	workerDone := make(chan error)
	go func() { workerDone <- w.Run(wctx) }()
	defer func() { stopWorker(); <-workerDone }()
	j, err = job.Resume("j", job.Options{Store: store, Stdout: io.Discard, Stderr: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	rctx, cancel := context.WithTimeout(ctx, testkit.Scale(time.Minute))
	defer cancel()
	sum, err := mapreduce.Run(rctx, j, mapreduce.Options{
		Dispatcher: New(Options{Conn: nc, Dist: state.Dist{Queue: natsconn.DefaultQueue}}),
		DLQ:        jobdlq.Open(ctx, "j", j.Layout().DLQ, io.Discard),
	})
	if err != nil || sum.Items.Succeeded != 3 {
		t.Fatalf("resume: %+v, %v", sum.Items, err)
	}
	if err := j.Finish(state.Completed, 0, nil, nil); err != nil {
		t.Fatal(err)
	}
	runs, _ := os.ReadFile("runs.log")
	if got := slices.Sorted(slices.Values(strings.Fields(string(runs)))); !slices.Equal(got, []string{"1", "3"}) {
		t.Errorf("items run on resume: %q, want 1 (its task adopted) and 3 (published again), once each", got)
	}
	if seqs := runSeqs(t, j.Layout().Events, "1", "1.0.1"); len(seqs) < 3 || !slices.Equal(seqs, seqsTo(len(seqs))) {
		t.Errorf("item 1's run 1.0.1 has its events recorded with seq %v, want each of 1..n once (1 and 2 by the ended process)", seqs)
	}
	info, err := objs.Tasks.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// Two tasks were stored in all: the ended process's for item 1 and
	// the new one for item 3.
	if info.State.LastSeq != 2 {
		t.Errorf("the task stream stored %d tasks, want 2 (item 1's from the ended process, item 3's now): a task was published again", info.State.LastSeq)
	}
}

// recordLive appends to the event log at path the first n events of item
// id's run as a coordinator records them live.
func recordLive(t *testing.T, path, id string, run remote.RunID, n int) {
	t.Helper()
	log, err := eventlog.Open(path, "j", eventlog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	for seq := 1; seq <= n; seq++ {
		e := eventlog.Event{Type: eventlog.TypeStepStarted, ItemID: id, Fields: map[string]any{"item_id": id, "step": "recorded-live", "index": 0}}
		if _, err := log.Emit(e.WithWorker("gone", run.Delivery).WithRun(run.String(), seq)); err != nil {
			t.Fatal(err)
		}
	}
}

// runSeqs are the seq of the events of item id's run recorded in the log
// at path, sorted.
func runSeqs(t *testing.T, path, id, run string) []int {
	t.Helper()
	events, err := eventlog.Read(path, eventlog.Query{Item: id})
	if err != nil {
		t.Fatal(err)
	}
	var seqs []int
	for _, e := range events {
		if e.Str("run_id") == run {
			seqs = append(seqs, int(e.Int("seq")))
		}
	}
	slices.Sort(seqs)
	return seqs
}

// seqsTo is 1..n.
func seqsTo(n int) []int {
	seqs := make([]int, n)
	for i := range seqs {
		seqs[i] = i + 1
	}
	return seqs
}
