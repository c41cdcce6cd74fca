package natscoord

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/runnerdev/runner/internal/eventlog"
	"github.com/runnerdev/runner/internal/itemtask"
	"github.com/runnerdev/runner/internal/natsconn"
	"github.com/runnerdev/runner/internal/state"
)

// Options configure a job's dispatcher.
type Options struct {
	Conn          *nats.Conn
	Dist          state.Dist // where: url, context, queue (the epoch is taken)
	MaxDeliveries int        // 0: DefaultMaxDeliveries
	// Replicas of the NATS objects, asked for (--nats-replicas,
	// distributed.replicas); 0: natsconn.DefaultReplicas.
	Replicas int
	Version  string    // this runner's, for the spec
	Warn     io.Writer // warnings about the NATS objects
	// Live shows each item's output as the workers send it, its stdout
	// and stderr apart (runner run --tag); nil: in its log only.
	Live *itemtask.Live
	// CheckEvery is how often, while items are out, the dispatcher makes
	// sure that nothing lost on the server leaves them waiting (see
	// check); 0: DefaultAckWait.
	CheckEvery time.Duration
	// Watch, when not nil, sees the dispatcher's stranded tasks and
	// outage while it is open.
	Watch *Watch
	// ProbeEvery is how often the dispatcher asks whether the NATS streams
	// answer (see watchStreams); 0: natsconn.ProbeEvery.
	ProbeEvery time.Duration
}

// Dispatcher sends a job's tasks to the workers of its queue and waits for
// their results (SPEC §11.4): one process, one epoch.
type Dispatcher struct {
	lock    *os.File // the job's NATS lock, held until Close
	j       itemtask.Job
	live    *itemtask.Live // where items' output is shown as it comes; nil: nowhere
	host    itemtask.Host
	js      jetstream.JetStream
	objs    *natsconn.Objects
	queue   string
	key     string
	epoch   int
	maxDel  int
	version string // this runner's, for the spec
	every   time.Duration
	results jetstream.Consumer
	pulls   *natsconn.Pulls // the standing pull of results, read by consume
	acks    *acks
	beats   *nats.Subscription // the workers' beats of the job's tasks
	prog    *tracker           // how the runs of the job's tasks go
	watch   *Watch
	stop    context.CancelFunc
	done    chan struct{}
	git     *gitSide      // map.isolation: worktree; nil otherwise
	watched chan struct{} // closed when watchStreams ended

	mu sync.Mutex
	// waiting are the dispatches out, by item index.
	waiting map[int]*waiter
	// early are results read before their item's dispatch asked for them:
	// the items an ended process left running (resume drains them).
	early map[int]inbound
	// expected are those items, by index, with their running attempt.
	expected map[int]int
	// adopted are the attempts whose tasks an ended process published
	// and that are still in the stream: they are waited for, not sent
	// again.
	adopted map[int]int
	// recorded are the events ended processes recorded of those items'
	// runs (the tracker's, once it is made).
	recorded    map[int]runEvents
	ids         map[int]string // item ids by index, as far as known
	interrupted bool
	// unacked are the results whose outcomes the engine has not yet
	// recorded, by dispatch id: acknowledged once it has (Recorded).
	unacked map[string]jetstream.Msg
	outage  natsconn.Outage // since when a stream does not answer; zero: they do
}

type waiter struct {
	attempt int
	task    itemtask.Task // to send again if the server loses it
	ch      chan inbound  // buffered, one
	// stored says the task is in the stream: published (the server
	// acknowledged it) or adopted. Until then it is not checked for.
	stored bool
	// adopted says an ended process published the task: its result may
	// be of any epoch; one this process sends is answered in its own.
	adopted bool
	// resends counts the times it was sent again (only the goroutine
	// reading results touches it).
	resends int
	holder  holder // the worker that has the task, as far as known
}

// inbound is a result as it arrived, with its message to acknowledge
// (nil for one read from the stream while delivered to an ended process:
// its delivery comes back later and is dropped then) and its place in the
// stream.
type inbound struct {
	r   natsconn.Result
	msg jetstream.Msg
	seq uint64
}

// Capabilities are what the NATS dispatcher does beyond running tasks: a
// worker reports each run's steps, events and delays as they come (see
// tracker), so that a task sent again goes on after its saved steps; items
// run in git worktrees on the workers, their commits carried through the
// job's git bucket (bundles.go).
var Capabilities = itemtask.Capabilities{Checkpoints: true, LiveEvents: true, SlotRelease: true, Worktrees: true}

// New returns the backend of a job's map items over NATS.
func New(opts Options) itemtask.Backend {
	return itemtask.Backend{Name: "NATS workers", Can: Capabilities, Open: func(ctx context.Context, j itemtask.Job, h itemtask.Host) (itemtask.Dispatcher, error) {
		return open(ctx, j, h, opts)
	}}
}

var _ itemtask.Dispatcher = (*Dispatcher)(nil)

// open sets the job up on the server under ctx and starts reading its
// results.
func open(ctx context.Context, j itemtask.Job, h itemtask.Host, opts Options) (*Dispatcher, error) {
	js, err := jetstream.New(opts.Conn)
	if err != nil {
		return nil, err
	}
	objs, err := natsconn.OpenObjects(ctx, js, opts.Warn, opts.Replicas)
	if err != nil {
		return nil, err
	}
	lock, err := lockJob(j)
	if err != nil {
		return nil, err
	}
	d := &Dispatcher{
		lock: lock, j: j, host: h, js: js, objs: objs, queue: opts.Dist.Queue, live: opts.Live,
		maxDel: cmp.Or(opts.MaxDeliveries, natsconn.DefaultMaxDeliveries), version: opts.Version, every: cmp.Or(opts.CheckEvery, natsconn.DefaultAckWait),
		waiting: map[int]*waiter{}, early: map[int]inbound{}, expected: map[int]int{}, adopted: map[int]int{}, ids: map[int]string{},
		done: make(chan struct{}), watched: make(chan struct{}), watch: opts.Watch, unacked: map[string]jetstream.Msg{}, acks: newAcks(),
	}
	abort := func(err error) (*Dispatcher, error) {
		if d.beats != nil {
			_ = d.beats.Unsubscribe()
		}
		d.acks.close()
		lock.Close()
		return nil, err
	}
	if err := d.start(ctx, opts); err != nil {
		return abort(err)
	}
	if d.git, err = openGit(ctx, d); err != nil {
		return abort(err)
	}
	if d.beats, err = opts.Conn.Subscribe(natsconn.BeatSubject(d.key), d.onBeat); err != nil {
		return abort(err)
	}
	if d.prog, err = trackProgress(opts.Conn, d.key, h, opts.Live); err != nil {
		return abort(err)
	}
	d.prog.recorded = d.recorded
	d.pulls = natsconn.NewPulls(d.results, resultsBatch)
	d.watch.set(d)
	replicas, replication := objs.Replication()
	h.JobEvent(eventlog.NATSStreams(replicas, replication))
	// The results are read until Close, even after ctx ends: an
	// interrupted job's late results are acknowledged as duplicates.
	cctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	d.stop = cancel
	go d.consume(cctx)
	go d.watchStreams(cctx, cmp.Or(opts.ProbeEvery, natsconn.ProbeEvery))
	return d, nil
}

// start takes the job's next epoch, puts its spec and reads what an
// ended process left out.
func (d *Dispatcher) start(ctx context.Context, opts Options) error {
	want := opts.Dist
	want.Key = natsconn.NewJobKey(d.j.ID())
	rec, err := nextEpoch(d.host.UpdateMeta, want)
	if err != nil {
		return err
	}
	d.epoch, d.key = rec.Epoch, rec.Key
	// A cluster may be electing leaders as the job starts: it waits for
	// them, within natsconn.StartWait.
	if err := natsconn.WhileUnanswered(ctx, natsconn.StartWait, func() error { return d.putSpec(ctx, natsconn.StatusRunning) }); err != nil {
		return err
	}
	if err := natsconn.WhileUnanswered(ctx, natsconn.StartWait, func() (err error) { d.results, err = d.objs.JobResults(ctx, d.key); return err }); err != nil {
		return err
	}
	return d.recover(ctx)
}

// lockJob takes the job's NATS lock: one process at a time sends a job's
// items to NATS, as they share the job's results consumer (two processes
// would take each other's results; two `dlq retry` processes are also
// kept apart by the hold of the job's DLQ). The kernel releases it when
// the process dies.
func lockJob(j itemtask.Job) (*os.File, error) {
	f, err := os.OpenFile(j.Layout().NATSLock, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, fmt.Errorf("another process of job %s sends its items to NATS (a dlq retry?): on NATS, one process of a job runs items at a time; try again when it ends", j.ID())
	}
	return f, nil
}

// putSpec writes the job's spec with status to RUNNER_JOBS.
func (d *Dispatcher) putSpec(ctx context.Context, status string) error {
	p, err := d.j.Portable()
	if err != nil {
		return err
	}
	sp := natsconn.Spec{
		Proto: natsconn.Proto, RunnerVersion: d.version, JobID: d.j.ID(), Queue: d.queue, Seed: d.j.Seed(), Status: status,
		MaxDeliveries: d.maxDel, Job: p, AgentTimeout: d.j.AgentTimeout(), Live: d.live != nil,
	}
	data, err := json.Marshal(sp)
	if err != nil {
		return err
	}
	if len(data) > natsconn.MaxSpec {
		return fmt.Errorf("the job's spec for NATS workers is %d bytes, over the %d a NATS message may hold (the workflow file and setup's captures make it up)", len(data), natsconn.MaxSpec)
	}
	ctx, cancel := context.WithTimeout(ctx, natsconn.CallDeadline)
	defer cancel()
	if _, err := d.objs.Jobs.Put(ctx, d.key, data); err != nil {
		return fmt.Errorf("NATS bucket %s: %w", natsconn.JobsBucket, err)
	}
	return nil
}

// recover finds, for the items an ended process left running, the tasks
// still in the stream (adopted: not sent again) and then the results
// stored for them (§11.7). The order matters: a worker acknowledges its
// task only after its result is stored, so a task gone by the time the
// results are read has its result among them.
func (d *Dispatcher) recover(ctx context.Context) error {
	states, err := d.j.ItemStates()
	if err != nil {
		return err
	}
	running := map[string]itemAttempt{}
	for i, rec := range states {
		d.ids[i] = rec.ID
		if rec.State != itemtask.ItemRunning {
			continue
		}
		d.expected[i] = max(rec.Attempt, 1)
		running[rec.ID] = itemAttempt{index: i, attempt: d.expected[i]}
		cctx, cancel := context.WithTimeout(ctx, natsconn.CallDeadline)
		raw, err := d.objs.Tasks.GetLastMsgForSubject(cctx, natsconn.TaskSubject(d.queue, d.key, i))
		cancel()
		switch {
		case errors.Is(err, jetstream.ErrMsgNotFound):
			continue
		case err != nil:
			return fmt.Errorf("NATS stream %s: %w", natsconn.TasksStream, err)
		}
		var t natsconn.Task
		if json.Unmarshal(raw.Data, &t) == nil && t.Attempt == d.expected[i] {
			d.adopted[i] = t.Attempt
		}
	}
	if len(running) > 0 {
		if d.recorded, err = recordedRuns(d.j.Layout().Events, running); err != nil {
			return fmt.Errorf("reading what the job's event log holds of its running items: %w", err)
		}
	}
	for {
		batch, err := d.results.FetchNoWait(64)
		if err != nil {
			return fmt.Errorf("NATS consumer %s: %w", natsconn.JobConsumer(d.key), err)
		}
		n := 0
		for msg := range batch.Messages() {
			n++
			d.receive(msg)
		}
		if batch.Error() != nil || n == 0 {
			break
		}
	}
	return d.readDelivered(ctx)
}

// readDelivered reads from the stream the results of running items that
// neither a task still out nor a drained result accounts for: results
// delivered to the ended process, which it did not record, wait out the
// consumer's ack_wait before they come again, and without them the items
// would run again.
func (d *Dispatcher) readDelivered(ctx context.Context) error {
	for i, attempt := range d.expected {
		if _, ok := d.adopted[i]; ok {
			continue
		}
		if _, ok := d.early[i]; ok {
			continue
		}
		cctx, cancel := context.WithTimeout(ctx, natsconn.CallDeadline)
		raw, err := d.objs.Results.GetLastMsgForSubject(cctx, natsconn.ResultSubject(d.key, i))
		cancel()
		switch {
		case errors.Is(err, jetstream.ErrMsgNotFound):
			continue
		case err != nil:
			return fmt.Errorf("NATS stream %s: %w", natsconn.ResultsStream, err)
		}
		var r natsconn.Result
		if json.Unmarshal(raw.Data, &r) == nil && r.Attempt == attempt {
			d.early[i] = inbound{r: r, seq: raw.Sequence}
		}
	}
	return nil
}

// resultsBatch is how many results one pull request of the coordinator
// asks for: the job's, of at most max_parallel tasks out, come as they
// are stored.
const resultsBatch = 64

// consume reads the job's results until ctx ends, and checks every
// d.every that the waiting dispatches can still get theirs.
func (d *Dispatcher) consume(ctx context.Context) {
	defer close(d.done)
	defer d.pulls.Stop()
	due := time.Now().Add(d.every)
	for ctx.Err() == nil {
		if !time.Now().Before(due) {
			d.check(ctx)
			due = time.Now().Add(d.every)
		}
		pctx, cancel := context.WithDeadline(ctx, due)
		msg, err := d.pulls.Next(pctx)
		checkDue := pctx.Err() != nil
		cancel()
		switch {
		case err == nil:
			d.receive(msg)
		case !checkDue:
			d.restore(ctx, err)
		}
	}
}

// check makes sure, while dispatches wait, that nothing the server lost
// leaves them waiting for ever when their consumer survived (restore does
// it when the server lost that too): the job's spec is put back in the
// jobs bucket if it is gone (else workers retry or drop its tasks), its
// git bucket made again if it is gone (keepGit), and the tasks that are
// neither in the stream nor have a result on the way are sent again. It
// costs three requests to the server whatever the number of items (four
// with worktree items): the spec, the git bucket, the subjects of the
// job's tasks in the stream and, only if some are missing, those of its
// results.
func (d *Dispatcher) check(ctx context.Context) {
	ws := d.stored()
	if len(ws) == 0 || !d.js.Conn().IsConnected() {
		return
	}
	if err := d.keepSpec(ctx); err != nil {
		d.objs.Warnf("job %s: checking its spec in NATS bucket %s: %v", d.j.ID(), natsconn.JobsBucket, err)
	}
	if !d.keepGit(ctx, d.objs, ws) {
		return // the tasks sent again would find no commit to start from
	}
	if err := d.resendLost(ctx, ws); err != nil {
		d.objs.Warnf("job %s: checking its tasks: %v", d.j.ID(), err)
	}
}

// keepSpec puts the job's spec back if the jobs bucket lost it, making
// the bucket again if it is gone.
func (d *Dispatcher) keepSpec(ctx context.Context) error {
	cctx, cancel := context.WithTimeout(ctx, natsconn.CallDeadline)
	defer cancel()
	_, err := d.objs.Jobs.Get(cctx, d.key)
	if err == nil {
		return nil
	}
	if !errors.Is(err, jetstream.ErrKeyNotFound) {
		if _, berr := d.js.KeyValue(cctx, natsconn.JobsBucket); !errors.Is(berr, jetstream.ErrBucketNotFound) {
			return err // the bucket is there: the server did not answer
		}
		if err := d.objs.Remade().OpenBucket(ctx); err != nil {
			return err
		}
	}
	d.objs.Warnf("job %s's spec was gone from NATS bucket %s: putting it back", d.j.ID(), natsconn.JobsBucket)
	return d.putSpec(ctx, natsconn.StatusRunning)
}

// restore makes the NATS objects again when a pull failed because the
// server lost the job's consumer (restarted on an empty store): first the
// jobs bucket with the job's spec, so that no worker takes a task of the
// job for one of an unknown job, then the streams and the consumer, and
// the job's git bucket (keepGit); then it sends again the tasks of the
// dispatches still waiting for a result that the tasks stream no longer
// holds. Only the items in flight can run twice: a result a worker
// stores after this is taken, the other one dropped as a duplicate.
func (d *Dispatcher) restore(ctx context.Context, pullErr error) {
	if !d.objs.Lost(ctx, pullErr, natsconn.ResultsStream, natsconn.JobConsumer(d.key)) {
		return
	}
	d.objs.Warnf("the NATS server lost job %s's consumer (restarted on an empty store?): making the NATS objects again and sending the tasks it lost", d.j.ID())
	objs := d.objs.Remade()
	err := objs.OpenBucket(ctx)
	if err == nil {
		err = d.putSpec(ctx, natsconn.StatusRunning)
	}
	if err == nil {
		err = objs.OpenStreams(ctx)
	}
	var results jetstream.Consumer
	if err == nil {
		results, err = objs.JobResults(ctx, d.key)
	}
	if err != nil {
		d.objs.Warnf("%v", err) // the next failed pull tries again
		return
	}
	d.pulls.Use(results)
	ws := d.stored()
	if !d.keepGit(ctx, objs, ws) {
		return // the next check tries again
	}
	if err := d.resendLost(ctx, ws); err != nil {
		d.objs.Warnf("job %s: checking its tasks: %v", d.j.ID(), err) // the next check tries again
	}
}

// keepGit makes the job's git bucket again, through objs, when the
// server lost it (map.isolation: worktree), with the bundles of the tips
// that the tasks of ws name: before they are sent again, so that the
// workers find the commits their items start from. It reports false,
// with a warning, when it could not.
func (d *Dispatcher) keepGit(ctx context.Context, objs *natsconn.Objects, ws []*waiter) bool {
	if d.git == nil {
		return true
	}
	var tips []string
	for _, w := range ws {
		if w.task.Tip != "" && !slices.Contains(tips, w.task.Tip) {
			tips = append(tips, w.task.Tip)
		}
	}
	remade, err := d.git.keep(ctx, objs, d.key, tips)
	if remade {
		d.objs.Warnf("the NATS server lost job %s's git bucket %s (restarted on an empty store?): making it again with the commits its tasks start from", d.j.ID(), natsconn.GitBucket(d.key))
	}
	if err != nil {
		d.objs.Warnf("job %s: checking its git bucket %s: %v", d.j.ID(), natsconn.GitBucket(d.key), err)
		return false
	}
	return true
}

// stored are the dispatches waiting for a result whose task was stored.
func (d *Dispatcher) stored() []*waiter {
	d.mu.Lock()
	defer d.mu.Unlock()
	ws := make([]*waiter, 0, len(d.waiting))
	for _, w := range d.waiting {
		if w.stored {
			ws = append(ws, w)
		}
	}
	return ws
}

// resendLost sends again the tasks of ws that the tasks stream no longer
// holds (a worker holds its task in the stream until its result is
// stored) and that no result is on the way for: lost with the stream, or
// dropped by a worker that found no spec of the job; a result stored for
// one that did not come is read from the stream (takeStored). Two
// requests find them, whatever their number: the subjects of the job's
// tasks in the stream, then, only if some are missing, those of its
// results (and one more per result stored but not come). The order
// matters as in recover: a worker acknowledges its task only after its
// result is stored, so a task gone before the first request has its
// result in the second, until this dispatcher has taken it.
func (d *Dispatcher) resendLost(ctx context.Context, ws []*waiter) error {
	queued, err := subjects(ctx, d.objs.Tasks, "runner.task."+d.queue+"."+d.key+".>")
	if err != nil {
		return fmt.Errorf("NATS stream %s: %w", natsconn.TasksStream, err)
	}
	var lost []*waiter
	for _, w := range ws {
		if queued[natsconn.TaskSubject(d.queue, d.key, w.task.Index)] == 0 {
			lost = append(lost, w)
		}
	}
	if len(lost) == 0 {
		return nil
	}
	stored, err := subjects(ctx, d.objs.Results, "runner.result."+d.key+".>")
	if err != nil {
		return fmt.Errorf("NATS stream %s: %w", natsconn.ResultsStream, err)
	}
	for _, w := range lost {
		switch {
		case stored[natsconn.ResultSubject(d.key, w.task.Index)] > 0:
			d.takeStored(ctx, w)
		case d.waits(w):
			d.resend(ctx, w)
		}
	}
	return nil
}

// resultInFlight is how long a stored result may take to reach this
// process through the job's consumer before a check reads it from the
// stream: it comes within milliseconds unless its delivery was lost.
const resultInFlight = natsconn.CallDeadline

// takeStored gives w the result stored for it that has not come through
// the job's consumer within resultInFlight: its delivery was lost (a
// consumer leader that stopped while sending it), and the consumer would
// send it again only after its ack_wait. Its delivery, when it comes, is
// dropped as a duplicate. One that cannot be read is taken at the next
// check.
func (d *Dispatcher) takeStored(ctx context.Context, w *waiter) {
	cctx, cancel := context.WithTimeout(ctx, natsconn.CallDeadline)
	raw, err := d.objs.Results.GetLastMsgForSubject(cctx, natsconn.ResultSubject(d.key, w.task.Index))
	cancel()
	if err != nil || time.Since(raw.Time) < resultInFlight {
		return
	}
	var r natsconn.Result
	if json.Unmarshal(raw.Data, &r) != nil {
		return
	}
	d.mu.Lock()
	if d.waiting[r.Index] != w || !w.answers(r, d.epoch) {
		d.mu.Unlock()
		return
	}
	d.give(w, inbound{r: r, seq: raw.Sequence})
	d.objs.Warnf("job %s: item %s's result did not come through NATS consumer %s: read from stream %s", d.j.ID(), w.task.ItemID, natsconn.JobConsumer(d.key), natsconn.ResultsStream)
}

// subjects counts the messages of stream s on each subject that filter
// matches.
func subjects(ctx context.Context, s jetstream.Stream, filter string) (map[string]uint64, error) {
	ctx, cancel := context.WithTimeout(ctx, natsconn.CallDeadline)
	defer cancel()
	info, err := s.Info(ctx, jetstream.WithSubjectFilter(filter))
	if err != nil {
		return nil, err
	}
	return info.State.Subjects, nil
}

// waits reports whether w still waits for its result.
func (d *Dispatcher) waits(w *waiter) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.waiting[w.task.Index] == w
}

// resend publishes w's task again, under a message id of its own: the
// stream's duplicate window may still hold the first one's (a worker
// dropped the task), and would drop it. The task is in the stream no
// more, so no worker runs it meanwhile. One that fails is sent at the
// next check.
func (d *Dispatcher) resend(ctx context.Context, w *waiter) {
	w.resends++
	d.objs.Warnf("job %s: item %s's task is gone from NATS stream %s with no result: sending it again", d.j.ID(), w.task.ItemID, natsconn.TasksStream)
	ctx, cancel := context.WithTimeout(ctx, 2*natsconn.CallDeadline)
	defer cancel()
	d.send(ctx, w.task, natsconn.TaskMsgID(d.key, w.task.Index, w.task.Attempt, d.epoch)+".r"+strconv.Itoa(w.resends))
}

// receive gives a result to the dispatch waiting for it, keeps it for an
// item resumed from an ended process, or drops it as a duplicate.
func (d *Dispatcher) receive(msg jetstream.Msg) {
	var r natsconn.Result
	if err := json.Unmarshal(msg.Data(), &r); err != nil || msg.Headers().Get(natsconn.HeaderProto) != natsconn.Proto {
		d.ack(msg) // not a result this runner can read: nothing waits for it
		return
	}
	in := inbound{r: r, msg: msg, seq: streamSeq(msg)}
	d.mu.Lock()
	// An earlier epoch's result of the same attempt number is not this
	// attempt's unless the task was adopted: a dlq retry numbers a
	// retried item's attempts from 1 again, and a result the first run
	// never acknowledged (a cluster electing leaders) comes back to it.
	if w, ok := d.waiting[r.Index]; ok && w.answers(r, d.epoch) {
		d.give(w, in)
		return
	}
	if a, ok := d.expected[r.Index]; ok && a == r.Attempt {
		// Kept until its item's dispatch takes it. Its message may come
		// again meanwhile (the consumer's ack_wait ran out): then the new
		// delivery is the one to acknowledge.
		if have, ok := d.early[r.Index]; !ok || have.seq == in.seq {
			d.early[r.Index] = in
			d.mu.Unlock()
			return
		}
	}
	d.mu.Unlock()
	d.duplicate(in)
}

// answers reports whether r is the outcome of w's task, this process's
// in epoch.
func (w *waiter) answers(r natsconn.Result, epoch int) bool {
	return w.attempt == r.Attempt && (w.adopted || r.Epoch == epoch)
}

// give hands in to w, the dispatch waiting for it; d.mu is held, and
// unlocked.
func (d *Dispatcher) give(w *waiter, in inbound) {
	r := in.r
	delete(d.waiting, r.Index)
	again, from := w.holder.learn(r.Worker, r.Delivery, 0, time.Time{})
	d.mu.Unlock()
	if again { // no beat told of it: the worker ran none (max_deliveries), or is older
		d.host.JobEvent(eventlog.TaskRedelivered(w.task.ItemID, r.Attempt, r.Delivery, r.Worker, from))
	}
	w.ch <- in
}

// streamSeq is where msg is in its stream: the same for every delivery
// of it.
func streamSeq(msg jetstream.Msg) uint64 {
	meta, err := msg.Metadata()
	if err != nil {
		return 0
	}
	return meta.Sequence.Stream
}

// duplicate drops a result whose attempt has one already.
func (d *Dispatcher) duplicate(in inbound) {
	d.ack(in.msg)
	d.host.JobEvent(eventlog.ResultDuplicate(d.itemID(in.r.Index), in.r.Attempt, in.r.Epoch, in.r.Worker, in.r.Delivery))
}

// itemID is the id of the item at index, for events about results that
// no dispatch waits for.
func (d *Dispatcher) itemID(index int) string {
	d.mu.Lock()
	defer d.mu.Unlock()
	if id, ok := d.ids[index]; ok {
		return id
	}
	return "#" + strconv.Itoa(index)
}

func (d *Dispatcher) ack(msg jetstream.Msg) {
	d.acks.add(msg)
}

// Dispatch publishes t's task, unless an ended process's is still out, and
// waits for its result (itemtask.Dispatcher).
func (d *Dispatcher) Dispatch(ctx context.Context, t itemtask.Task) (itemtask.Outcome, error) {
	if out, ok := d.withTip(ctx, &t); !ok {
		return out, nil
	}
	if out, ok := d.itemBranchFree(ctx, t); !ok {
		return out, nil
	}
	d.mu.Lock()
	d.ids[t.Index] = t.ItemID
	if in, ok := d.early[t.Index]; ok && in.r.Attempt == t.Attempt {
		delete(d.early, t.Index)
		delete(d.expected, t.Index)
		d.mu.Unlock()
		return d.outcome(t, in), nil
	}
	delete(d.expected, t.Index)
	p := d.prog.track(ctx, t)
	defer d.prog.untrack(p)
	adopted := d.adopted[t.Index] == t.Attempt
	w := &waiter{attempt: t.Attempt, task: t, ch: make(chan inbound, 1), stored: adopted, adopted: adopted}
	d.waiting[t.Index] = w
	delete(d.adopted, t.Index)
	d.mu.Unlock()
	defer func() {
		d.mu.Lock()
		if d.waiting[t.Index] == w {
			delete(d.waiting, t.Index)
		}
		d.mu.Unlock()
	}()
	if !adopted {
		if out, sent := d.send(ctx, t, natsconn.TaskMsgID(d.key, t.Index, t.Attempt, d.epoch)); !sent {
			return out, nil
		}
		d.mu.Lock()
		w.stored = ctx.Err() == nil
		d.mu.Unlock()
	}
	select {
	case in := <-w.ch:
		return d.outcome(t, in), nil
	case err := <-p.abort:
		return itemtask.Outcome{}, err
	case <-ctx.Done():
		d.mu.Lock()
		d.interrupted = true
		d.mu.Unlock()
		d.prog.interrupt()
		return itemtask.Outcome{}, context.Cause(ctx)
	}
}

// send publishes t's task under message id. It reports false, with the
// outcome of the attempt, when the task cannot be sent (too large for
// NATS).
func (d *Dispatcher) send(ctx context.Context, t itemtask.Task, id string) (itemtask.Outcome, bool) {
	checkpoints, sent := d.prog.sending(t)
	body, err := taskBody(natsconn.Task{JobID: t.JobID, Index: t.Index, ItemID: t.ItemID, Attempt: t.Attempt, Epoch: d.epoch, Item: t.Item, MaxDeliveries: d.maxDel, Total: t.Total, Tip: t.Tip, Checkpoints: checkpoints, Sent: sent})
	if err == nil && len(body) > natsconn.MaxTask {
		err = fmt.Errorf("item too large for NATS max_payload: its task is %d bytes, over %d", len(body), natsconn.MaxTask)
	}
	if err == nil {
		m := natsconn.NewMsg(natsconn.TaskSubject(d.queue, d.key, t.Index), t.JobID, body)
		err = natsconn.Publish(ctx, d.js, m, id)
		if ctx.Err() != nil {
			return itemtask.Outcome{}, true // interrupted: the wait says so
		}
	}
	if err == nil {
		return itemtask.Outcome{}, true
	}
	return t.FailedWith("spawn", err), false
}

// outcome is the outcome of t that in carries: the worker's events are
// recorded and its log appended to the item's, and the result is
// acknowledged once the engine has recorded it (Recorded).
func (d *Dispatcher) outcome(t itemtask.Task, in inbound) itemtask.Outcome {
	r := in.r
	origin := itemtask.Origin{Worker: r.Worker, Delivery: r.Delivery}
	duration := time.Duration(r.DurationMS) * time.Millisecond
	if r.LastStep != nil {
		_ = d.host.Checkpoint(t.DispatchID, *r.LastStep) // refused: the outcome is stale too
	}
	events, first := d.prog.unemitted(t.Index, r)
	for i, e := range events {
		_ = d.host.Emit(t.DispatchID, e.WithWorker(r.Worker, r.Delivery).WithRun(r.RunID().String(), first+i))
	}
	if r.LogTail != "" {
		// The worker does not write the attempt's header: a tail of its
		// log could leave it out.
		d.host.AppendLog(t, origin, time.Now().Add(-duration), r.LogTail)
	}
	if in.msg != nil {
		d.mu.Lock()
		d.unacked[t.DispatchID] = in.msg
		d.mu.Unlock()
	}
	out := itemtask.Outcome{DispatchID: t.DispatchID, Failed: r.Failed, Output: r.Output, Duration: duration, Origin: origin}
	if r.Failed && r.Failure != nil {
		out.Failure = r.Failure.Local()
		out.Failure.Attempt = t.Attempt
	} else if r.Failed {
		out.Failure = itemtask.Failure{Attempt: t.Attempt, At: time.Now(), Kind: "failed", Message: "the worker's result gave no failure"}
	}
	if d.git != nil {
		out = d.git.fetchItem(context.Background(), t.Tip, r, out)
	}
	return out
}

// Recorded has the result of dispatch id, which the engine has recorded,
// acknowledged (itemtask.Dispatcher), without waiting for it: the
// acknowledgement goes out even when ctx ended meanwhile (an interrupt),
// as the record is made and the result would otherwise come back, and
// Close waits until the server confirmed it.
func (d *Dispatcher) Recorded(_ context.Context, id string) {
	d.mu.Lock()
	msg, ok := d.unacked[id]
	delete(d.unacked, id)
	d.mu.Unlock()
	if ok {
		d.ack(msg)
	}
}

// nextEpoch records in the job's metadata (changed through update) that this process runs the
// job's items on NATS as want says, in an epoch after every earlier
// process's, and returns the record: its epoch, and the key of the first
// process (want's for the first). It is saved before it returns: a
// process that dies after publishing cannot leave its epoch to the next
// one.
func nextEpoch(update func(func(*state.Meta)) error, want state.Dist) (state.Dist, error) {
	err := update(func(m *state.Meta) {
		if prev := m.Dist; prev != nil {
			want.Epoch = prev.Epoch
			want.Key = cmp.Or(prev.Key, want.Key)
		}
		want.Epoch++
		m.Dist = &want
	})
	return want, err
}

// Close stops reading results. After an interrupt it marks the job
// interrupted in its spec, which stops its items on the workers, and
// removes its tasks from the stream; otherwise the job's consumer and spec
// go, as nothing of it is out any more.
func (d *Dispatcher) Close() error {
	defer d.lock.Close()
	// The runs' questions are answered until the spec says that the job
	// was interrupted (which stops its runs on the workers): none goes
	// on without one of its slots for want of an answer.
	defer d.prog.close()
	d.watch.set(nil)
	_ = d.beats.Unsubscribe()
	d.stop()
	<-d.done
	d.acks.close() // before the consumer goes: its acknowledged results leave the stream
	<-d.watched
	// Close runs when the job's context may have ended (an interrupt): the
	// spec's status and the purge must still reach the server.
	ctx, cancel := context.WithTimeout(context.Background(), 3*natsconn.CallDeadline)
	defer cancel()
	d.mu.Lock()
	interrupted := d.interrupted
	d.mu.Unlock()
	if d.git != nil {
		// An interrupted job's bundles serve its resume (same key).
		defer d.git.close(ctx, d.objs, d.key, !interrupted)
	}
	if interrupted {
		err := d.setStatus(ctx, natsconn.StatusInterrupted)
		if perr := d.objs.Tasks.Purge(ctx, jetstream.WithPurgeSubject("runner.task."+d.queue+"."+d.key+".>")); err == nil {
			err = perr
		}
		return err
	}
	err := d.js.DeleteConsumer(ctx, natsconn.ResultsStream, natsconn.JobConsumer(d.key))
	if errors.Is(err, jetstream.ErrConsumerNotFound) {
		err = nil
	}
	// Every result is recorded: those a killed coordinator received and
	// never acknowledged are dropped with the rest.
	if perr := d.objs.Results.Purge(ctx, jetstream.WithPurgeSubject(natsconn.JobResultsSubject(d.key))); err == nil {
		err = perr
	}
	if derr := d.objs.Jobs.Delete(ctx, d.key); err == nil {
		err = derr
	}
	return err
}

// setStatus rewrites the status in the job's spec.
func (d *Dispatcher) setStatus(ctx context.Context, status string) error {
	entry, err := d.objs.Jobs.Get(ctx, d.key)
	if err != nil {
		return err
	}
	var sp natsconn.Spec
	if err := json.Unmarshal(entry.Value(), &sp); err != nil {
		return err
	}
	sp.Status = status
	data, err := json.Marshal(sp)
	if err != nil {
		return err
	}
	_, err = d.objs.Jobs.Put(ctx, d.key, data)
	return err
}
