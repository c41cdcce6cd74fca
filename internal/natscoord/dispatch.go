package natscoord

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/runnerdev/runner/internal/eventlog"
	"github.com/runnerdev/runner/internal/itemtask"
	"github.com/runnerdev/runner/internal/itemtask/remote"
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
	// Batch is the most tasks one message carries (--nats-batch): the
	// tasks ready while one message is published go together in the
	// next (batch.go); 0 or 1: each in its own.
	Batch   int
	Version string    // this runner's, for the spec
	Warn    io.Writer // warnings about the NATS objects
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
	batch   int    // the most tasks a message carries, at least 1
	version string // this runner's, for the spec
	every   time.Duration
	results jetstream.Consumer
	pulls   *natsconn.Pulls // the standing pull of results, read by consume
	out     *sender         // publishes the tasks, in batches
	acks    *acks
	// prog hears how the runs of the job's tasks go (progress) and tells
	// the Host as it comes: each step saved before the worker starts the
	// next, events recorded while the task runs, the job's slot given
	// back during a step's delay.
	prog *remote.Tracker
	// The subscriptions to the workers' beats of the job's tasks, to
	// their questions about batches delivered again (natsconn.Awaited)
	// and to the runs' progress.
	beats, awaited, progress *nats.Subscription
	watch                    *Watch
	stop                     context.CancelFunc
	running                  sync.WaitGroup // consume, the sender and watchStreams, until stop
	git                      *gitSide       // map.isolation: worktree; nil otherwise

	mu sync.Mutex
	// items are the records of the items out, by index (items.go): the
	// dispatcher's one table.
	items map[int]*record
	keys  uint64 // the records' numbers so far

	interrupted atomic.Bool
	outage      atomic.Pointer[natsconn.Outage] // since when a stream does not answer; nil: they do
}

// Capabilities are what the NATS dispatcher does beyond running tasks: a
// worker reports each run's steps, events and delays as they come (see
// Dispatcher.prog), so that a task sent again goes on after its saved
// steps; items run in git worktrees on the workers, their commits carried
// through the job's git bucket (bundles.go).
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
		maxDel: cmp.Or(opts.MaxDeliveries, natsconn.DefaultMaxDeliveries), batch: max(opts.Batch, 1), version: opts.Version, every: cmp.Or(opts.CheckEvery, natsconn.DefaultAckWait),
		items: map[int]*record{}, watch: opts.Watch, acks: newAcks(), prog: remote.NewTracker(h, opts.Live),
	}
	// The results are read, and the tasks sent, until Close, even after
	// ctx ends: an interrupted job's late results are acknowledged as
	// duplicates.
	cctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	d.stop = cancel
	abort := func(err error) (*Dispatcher, error) {
		for _, sub := range []*nats.Subscription{d.beats, d.progress, d.awaited} {
			if sub != nil {
				_ = sub.Unsubscribe()
			}
		}
		cancel()
		d.running.Wait()
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
	if d.progress, err = natsconn.ServeProgress(opts.Conn, d.key, d.prog.Receive); err != nil {
		return abort(err)
	}
	d.out = newSender(d)
	d.running.Go(func() { d.out.run(cctx) })
	if err := d.leftRunning(); err != nil {
		return abort(err)
	}
	if d.awaited, err = opts.Conn.Subscribe(natsconn.AwaitedSubject(d.key), d.answerAwaited); err != nil {
		return abort(err)
	}
	// The items an ended process left running are settled before any is
	// dispatched: their tasks adopted, their results taken.
	if err := d.check(ctx); err != nil {
		return abort(err)
	}
	d.pulls = natsconn.NewPulls(d.results, resultsBatch)
	d.watch.set(d)
	replicas, replication := objs.Replication()
	h.JobEvent(eventlog.NATSStreams(replicas, replication))
	d.running.Go(func() { d.consume(cctx) })
	d.running.Go(func() { d.watchStreams(cctx, cmp.Or(opts.ProbeEvery, natsconn.ProbeEvery)) })
	return d, nil
}

// start takes the job's next epoch, puts its spec and opens its results
// consumer.
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
	return natsconn.WhileUnanswered(ctx, natsconn.StartWait, func() (err error) { d.results, err = d.objs.JobResults(ctx, d.key); return err })
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

// leftRunning puts in the table the items an ended process left
// running, to be settled by the first check, with the events ended
// processes recorded of their runs (recordedRuns).
func (d *Dispatcher) leftRunning() error {
	states, err := d.j.RunningItems()
	if err != nil {
		return err
	}
	running := map[string]*record{}
	d.mu.Lock()
	for i, rec := range states {
		running[rec.ID] = d.newRecord(i, max(rec.Attempt, 1), rec.ID, left)
	}
	d.mu.Unlock()
	if len(running) == 0 {
		return nil
	}
	if err := recordedRuns(d.j.Layout().Events, running); err != nil {
		return fmt.Errorf("reading what the job's event log holds of its running items: %w", err)
	}
	return nil
}

// recordedRuns reads the job's event log at path for the events that
// ended processes recorded of the runs of items (their records, by item
// id), in their running attempts, and counts in each record's emitted
// those of each run (the highest "seq" of its "run_id"). An attempt's
// events follow its item_started.
func recordedRuns(path string, items map[string]*record) error {
	current := map[string]int64{} // each item's attempt as the log goes
	err := eventlog.Scan(path, eventlog.Query{}, func(e eventlog.Event) error {
		it, ok := items[e.ItemID]
		switch {
		case !ok:
		case e.Type == eventlog.TypeItemStarted:
			current[e.ItemID] = e.Int("attempt")
		case current[e.ItemID] == int64(it.attempt):
			if run, ok := remote.ParseRunID(e.Str("run_id")); ok {
				if it.emitted == nil {
					it.emitted = map[remote.RunID]int{}
				}
				it.emitted[run] = max(it.emitted[run], int(e.Int("seq")))
			}
		}
		return nil
	})
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}

// resultsBatch is how many results one pull request of the coordinator
// asks for: the job's, of at most max_parallel tasks out, come as they
// are stored.
const resultsBatch = 64

// consume reads the job's results until ctx ends, and checks every
// d.every that the waiting dispatches can still get theirs.
func (d *Dispatcher) consume(ctx context.Context) {
	defer d.pulls.Stop()
	due := time.Now().Add(d.every)
	for ctx.Err() == nil {
		if !time.Now().Before(due) {
			// In an outage the next check, or restore, settles what it lost.
			if d.js.Conn().IsConnected() {
				if err := d.check(ctx); err != nil {
					d.objs.Warnf("job %s: checking its tasks: %v", d.j.ID(), err)
				}
			}
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

// outcome is the outcome of t that rec's result carries, which makes rec
// recording: the item's branch fetched back (worktree items), the
// worker's events recorded and its log appended to the item's. Ended with
// ctx, the job is interrupted, and the result, unacknowledged, is taken
// again on resume.
func (d *Dispatcher) outcome(ctx context.Context, rec *record, t itemtask.Task) (itemtask.Outcome, error) {
	d.mu.Lock()
	r := rec.in.r
	d.mu.Unlock()
	origin := itemtask.Origin{Worker: r.Worker, Delivery: r.Delivery}
	duration := time.Duration(r.DurationMS) * time.Millisecond
	out := itemtask.Outcome{DispatchID: t.DispatchID, Failed: r.Failed, Output: r.Output, Duration: duration, Origin: origin, Usage: r.Usage}
	if r.Failed && r.Failure != nil {
		out.Failure = *r.Failure
		out.Failure.Attempt = t.Attempt
	} else if r.Failed {
		out.Failure = itemtask.Failure{Attempt: t.Attempt, At: time.Now(), Kind: "failed", Message: "the worker's result gave no failure"}
	}
	if d.git != nil {
		if out = d.git.fetchItem(ctx, t.Tip, r, out); ctx.Err() != nil {
			return itemtask.Outcome{}, d.interrupt(ctx)
		}
	}
	if r.LastStep != nil {
		_ = d.host.Checkpoint(t.DispatchID, *r.LastStep) // refused: the outcome is stale too
	}
	events, first := d.prog.Unemitted(t.Index, r.Attempt, r.RunID(), r.Events, rec.emitted)
	for i, e := range events {
		_ = d.host.Emit(t.DispatchID, e.WithWorker(r.Worker, r.Delivery).WithRun(r.RunID().String(), first+i))
	}
	if r.LogTail != "" {
		// The worker does not write the attempt's header: a tail of its
		// log could leave it out.
		d.host.AppendLog(t, origin, time.Now().Add(-duration), r.LogTail)
	}
	d.mu.Lock()
	rec.phase = recording
	d.mu.Unlock()
	return out, nil
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
	defer d.progress.Unsubscribe()
	d.watch.set(nil)
	_ = d.beats.Unsubscribe()
	_ = d.awaited.Unsubscribe()
	d.stop()
	d.running.Wait()
	d.acks.close() // before the consumer goes: its acknowledged results leave the stream
	// Close runs when the job's context may have ended (an interrupt): the
	// spec's status and the purge must still reach the server.
	ctx, cancel := context.WithTimeout(context.Background(), 3*natsconn.CallDeadline)
	defer cancel()
	interrupted := d.interrupted.Load()
	if d.git != nil {
		// An interrupted job's bundles serve its resume (same key).
		defer d.git.close(ctx, d.objs, d.key, !interrupted)
	}
	if interrupted {
		err := d.putSpec(ctx, natsconn.StatusInterrupted)
		if perr := d.objs.Tasks.Purge(ctx, jetstream.WithPurgeSubject(natsconn.JobTasksSubject(d.queue, d.key))); err == nil {
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
