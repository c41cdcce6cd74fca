package natscoord

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/runnerdev/runner/internal/dispatchtest"
	"github.com/runnerdev/runner/internal/eventlog"
	"github.com/runnerdev/runner/internal/itemtask"
	"github.com/runnerdev/runner/internal/job"
	"github.com/runnerdev/runner/internal/natsconn"
	"github.com/runnerdev/runner/internal/natstest"
	"github.com/runnerdev/runner/internal/natsworker"
	"github.com/runnerdev/runner/internal/state"
	"github.com/runnerdev/runner/internal/testkit"
)

// workersAckWait is the ack_wait of startWorker's workers.
const workersAckWait = 10 * time.Second

// startWorker runs a worker named name on nc until the test ends, its
// log in log, asking every 100 ms whether the streams answer.
func startWorker(t *testing.T, nc *nats.Conn, name string, log io.Writer) {
	t.Helper()
	runWorkerWith(t, natsworker.WorkerOptions{Conn: nc, Queue: natsconn.DefaultQueue, Concurrency: 2, Name: name,
		AckWait: testkit.Scale(workersAckWait), StoreDir: t.TempDir(), Log: log, Open: openPortable(name), ProbeEvery: 100 * time.Millisecond})
}

// natsEvents are the job's events of the NATS streams, by type.
func natsEvents(t *testing.T, j *job.Job) map[eventlog.Type][]eventlog.Event {
	t.Helper()
	events, err := eventlog.Read(j.Layout().Events, eventlog.Query{Types: []eventlog.Type{eventlog.TypeNATSStreams, eventlog.TypeNATSUnavailable, eventlog.TypeNATSRestored}})
	if err != nil {
		t.Fatal(err)
	}
	byType := map[eventlog.Type][]eventlog.Event{}
	for _, e := range events {
		byType[e.Type] = append(byType[e.Type], e)
	}
	return byType
}

// While the server is down (killed -9, then restarted on its store), the
// job says so in an event and on the status line, and the worker in its
// log; both wait for it, say when it answers again, and the job ends
// with its items done.
func TestUnavailableStreamsAreSaidAndWaitedFor(t *testing.T) {
	srv := natstest.Process(t, t.TempDir(), 0)
	dir := jobDir(t)
	j := startJob(t, dir, heldItems(dir, 2, 2, 3000))
	log := &logBuffer{}
	startWorker(t, srv.Connect(t), "w", log)
	var watch Watch
	done := startMap(t, j, 2*time.Minute, Options{Conn: srv.Connect(t), Watch: &watch, ProbeEvery: 100 * time.Millisecond})
	if !testkit.Poll(func() bool {
		_, err1 := os.Stat("started.1")
		_, err2 := os.Stat("started.2")
		return err1 == nil && err2 == nil
	}) {
		t.Fatal("the items did not start")
	}
	srv.Kill()
	if !testkit.Poll(func() bool { return watch.Outage().Down() }) {
		t.Fatal("the dispatcher did not see the server gone")
	}
	// The server is down: every stream is, and both name the first of
	// them, whichever the probe was asking when the server went.
	if o := watch.Outage(); o.Stream != natsconn.TasksStream {
		t.Errorf("the dispatcher's outage names %s, want %s", o, natsconn.TasksStream)
	}
	if !testkit.Poll(func() bool { return len(natsEvents(t, j)[eventlog.TypeNATSUnavailable]) == 1 }) {
		t.Error("no nats_unavailable event")
	} else if e := natsEvents(t, j)[eventlog.TypeNATSUnavailable][0]; e.Str("stream") != natsconn.TasksStream {
		t.Errorf("the nats_unavailable event names %s, want %s", e.Str("stream"), natsconn.TasksStream)
	}
	if !testkit.Poll(func() bool { return strings.Contains(log.String(), "runner worker w: NATS stream ") }) {
		t.Errorf("the worker did not log the outage:\n%s", log.String())
	} else if !strings.Contains(log.String(), "runner worker w: NATS stream "+natsconn.TasksStream+" unavailable (") {
		t.Errorf("the worker's outage line does not name %s:\n%s", natsconn.TasksStream, log.String())
	}
	srv.Restart()
	if !testkit.Poll(func() bool { return !watch.Outage().Down() }) {
		t.Fatal("the dispatcher did not see the server back")
	}
	if err := os.WriteFile("go", nil, 0o600); err != nil {
		t.Fatal(err)
	}
	finishSucceeded(t, j, <-done, 2)
	got := natsEvents(t, j)
	if s := got[eventlog.TypeNATSStreams]; len(s) != 1 || s[0].Int("replicas") != 1 || s[0].Str("replication") != "R1" {
		t.Errorf("nats_streams events %v, want one of R1", s)
	}
	if len(got[eventlog.TypeNATSUnavailable]) != 1 || len(got[eventlog.TypeNATSRestored]) != 1 {
		t.Errorf("events %v, want one nats_unavailable and one nats_restored", got)
	}
	if !strings.Contains(log.String(), "runner worker w: the NATS streams answer again, after ") {
		t.Errorf("the worker did not log the streams back:\n%s", log.String())
	}
}

// On a cluster of three servers the job's streams get three replicas, and
// losing the server that leads the tasks stream mid-job loses nothing: the
// job ends with every item done, and the items that ran again are at most
// those in flight. The job ends within the recovery bound after the loss:
// a task whose acknowledgement was lost comes again after the workers'
// ack_wait, and a result whose delivery was lost is read from the stream
// at the dispatcher's next check (one every checkEvery, of results stored
// resultInFlight), plus the elections of the streams' and consumers' new
// leaders.
func TestClusterLosesTheTasksLeaderMidJob(t *testing.T) {
	c := natstest.StartCluster(t, 3)
	dir := t.TempDir()
	t.Chdir(dir)
	const items, inFlight = 24, 4
	const checkEvery, elections = 2 * time.Second, 15 * time.Second
	const recovery = workersAckWait + checkEvery + resultInFlight + elections
	j := startJob(t, dir, fmt.Sprintf(`mode: mapreduce
map:
  input: seq 1 %d
  max_parallel: %d
  agent_template:
    - shell: echo ${item} >> runs.log; sleep 0.1
`, items, inFlight))
	logs, warnings := &stampedLog{}, &stampedLog{}
	for i, s := range c.Servers[:2] {
		startWorker(t, s.Connect(t), fmt.Sprintf("w%d", i+1), logs)
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var watch Watch
	done := runMap(ctx, j, Options{Conn: c.Servers[2].Connect(t), Dist: state.Dist{Queue: natsconn.DefaultQueue}, Warn: warnings, Watch: &watch,
		ProbeEvery: 100 * time.Millisecond, CheckEvery: checkEvery})
	if !testkit.Poll(func() bool { return len(runs(t)) >= items/3 }) {
		t.Fatal("a third of the items did not run")
	}
	if s := natsEvents(t, j)[eventlog.TypeNATSStreams]; len(s) != 1 || s[0].Str("replication") != "R3" {
		t.Fatalf("nats_streams events %v, want one of R3", s)
	}
	leader := c.StreamLeader(natsconn.TasksStream)
	if leader == nil {
		t.Fatal("the tasks stream has no leader")
	}
	leader.Shutdown()
	logs.say("test: tasks stream leader %s shut down", leader.URL())
	lost := time.Now()
	var r ran
	select {
	case r = <-done:
		t.Logf("the job ended %s after the leader's loss", time.Since(lost).Round(time.Millisecond))
	case <-time.After(testkit.Scale(recovery)):
		t.Errorf("the job did not end within %s of the leader's loss; what NATS and the coordinator hold:\n%s",
			recovery, clusterState(t, survivor(c, leader).Connect(t), &watch))
		cancel()
		r = <-done
	}
	if r.err != nil || r.sum.Items.Succeeded != items {
		t.Fatalf("run: %v, items %+v; want %d succeeded\nthe coordinator's warnings:\n%s\nthe workers' logs:\n%s\nevents: %v",
			r.err, r.sum.Items, items, warnings, logs, natsEvents(t, j))
	}
	if err := j.Finish(state.Completed, 0, nil, nil); err != nil {
		t.Fatal(err)
	}
	ran := runs(t)
	for i := 1; i <= items; i++ {
		if !slices.Contains(ran, fmt.Sprint(i)) {
			t.Errorf("item %d never ran", i)
		}
	}
	if extra := len(ran) - items; extra > inFlight {
		t.Errorf("%d extra runs, more than the %d items in flight: %v", extra, inFlight, ran)
	}
}

// A result stored whose delivery to the coordinator was lost (the job's
// results consumer's leader stopped while sending it, as
// TestClusterLosesTheTasksLeaderMidJob saw: the consumer sends it again
// only after its ack_wait of 60 s) is read from the stream by the
// dispatcher's check once it has been stored resultInFlight, not waited
// for.
func TestResultWhoseDeliveryWasLostIsReadFromTheStream(t *testing.T) {
	srv, js, _ := serve(t)
	dir := t.TempDir()
	t.Chdir(dir)
	j := startJob(t, dir, "mode: mapreduce\nmap:\n  input: echo x\n  agent_template:\n    - shell: 'true'\n")
	warnings := &logBuffer{}
	opened, err := New(Options{Conn: srv.Connect(t), Dist: state.Dist{Queue: natsconn.DefaultQueue}, Warn: warnings}).Open(t.Context(), viewOf(t, j), &refusingHost{Host: &dispatchtest.Host{}, job: j})
	if err != nil {
		t.Fatal(err)
	}
	d := opened.(*Dispatcher)
	defer d.Close()
	d.stop() // no result comes through the consumer any more: each delivery is lost
	d.running.Wait()
	d.mu.Lock()
	r := d.newRecord(0, 1, "x", published)
	r.task = itemtask.Task{JobID: j.ID(), Index: 0, ItemID: "x", Attempt: 1, DispatchID: "x.1"}
	d.mu.Unlock()
	body, err := json.Marshal(natsconn.Result{Index: 0, Attempt: 1, Epoch: d.epoch, Worker: "w1", Delivery: 1})
	if err != nil {
		t.Fatal(err)
	}
	if err := natsconn.Publish(t.Context(), js, natsconn.NewMsg(natsconn.ResultSubject(d.key, 0), j.ID(), body), "lost"); err != nil {
		t.Fatal(err)
	}
	if !testkit.Poll(func() bool {
		if err := d.check(t.Context()); err != nil {
			t.Log(err)
		}
		select {
		case <-r.ready:
			return true
		default:
			return false
		}
	}) {
		t.Fatal("the stored result was not read from the stream")
	}
	d.mu.Lock()
	got := r.in
	d.mu.Unlock()
	if got.r.Worker != "w1" || got.msg != nil {
		t.Errorf("got %+v; want w1's result, read from the stream (no message to acknowledge)", got)
	}
	if want := "item x's result did not come through NATS consumer " + natsconn.JobConsumer(d.key) + ": read from stream RUNNER_RESULTS"; !strings.Contains(warnings.String(), want) {
		t.Errorf("warnings:\n%s\nwant %q", warnings, want)
	}
}

// stampedLog is a log read while it is written, each line stamped with
// the time it was written at.
type stampedLog struct{ logBuffer }

func (l *stampedLog) Write(p []byte) (int, error) {
	l.say("%s", strings.TrimSuffix(string(p), "\n"))
	return len(p), nil
}

// say writes a stamped line.
func (l *stampedLog) say(format string, args ...any) {
	_, _ = fmt.Fprintf(&l.logBuffer, "%s "+format+"\n", append([]any{time.Now().Format("15:04:05.000")}, args...)...)
}

// survivor is a server of c other than gone.
func survivor(c *natstest.Cluster, gone *natstest.Server) *natstest.Server {
	if c.Servers[0] == gone {
		return c.Servers[1]
	}
	return c.Servers[0]
}

// clusterState is what the job's streams and consumers hold, seen through
// nc, and what the coordinator's dispatcher waits for: to see why an item
// is still pending.
func clusterState(t *testing.T, nc *nats.Conn, watch *Watch) string {
	t.Helper()
	js, err := jetstream.New(nc)
	if err != nil {
		return err.Error()
	}
	var b strings.Builder
	for _, s := range []struct{ stream, filter string }{
		{natsconn.TasksStream, "runner.task.>"},
		{natsconn.ResultsStream, "runner.result.>"},
	} {
		info, err := js.Stream(t.Context(), s.stream)
		if err != nil {
			fmt.Fprintf(&b, "stream %s: %v\n", s.stream, err)
			continue
		}
		si, err := info.Info(t.Context(), jetstream.WithSubjectFilter(s.filter))
		if err != nil {
			fmt.Fprintf(&b, "stream %s: %v\n", s.stream, err)
			continue
		}
		fmt.Fprintf(&b, "stream %s: leader %s, %d msgs, subjects %v\n", s.stream, leaderOf(si.Cluster), si.State.Msgs, si.State.Subjects)
		names := info.ConsumerNames(t.Context())
		for name := range names.Name() {
			ci, err := js.Consumer(t.Context(), s.stream, name)
			if err != nil {
				fmt.Fprintf(&b, "  consumer %s: %v\n", name, err)
				continue
			}
			c := ci.CachedInfo()
			fmt.Fprintf(&b, "  consumer %s: leader %s, num_pending %d, num_ack_pending %d, num_redelivered %d, num_waiting %d, delivered %+v, ack_floor %+v\n",
				name, leaderOf(c.Cluster), c.NumPending, c.NumAckPending, c.NumRedelivered, c.NumWaiting, c.Delivered, c.AckFloor)
		}
	}
	fmt.Fprintf(&b, "the coordinator waits for: %s\n", waitingState(watch))
	return b.String()
}

// leaderOf names the leader in c.
func leaderOf(c *jetstream.ClusterInfo) string {
	if c == nil {
		return "(not clustered)"
	}
	return c.Leader
}

// waitingState is what the watched dispatcher waits for: each item's
// attempt, its phase and holder.
func waitingState(watch *Watch) string {
	d := watch.d.Load()
	if d == nil {
		return "no dispatcher open"
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	var b strings.Builder
	for index, r := range d.items {
		h := r.holder
		fmt.Fprintf(&b, "\n  item %s (index %d) attempt %d: phase %d, holder %q delivery %d, last beat %s",
			r.id, index, r.attempt, r.phase, h.worker, h.delivery, h.beatAt.Format("15:04:05.000"))
	}
	return b.String()
}

// runs are the items' runs, as they wrote them to runs.log.
func runs(t *testing.T) []string {
	data, err := os.ReadFile("runs.log")
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return strings.Fields(string(data))
}
