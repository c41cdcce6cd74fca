package natsworker

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/runnerdev/runner/internal/eventlog"
	"github.com/runnerdev/runner/internal/itemtask"
	"github.com/runnerdev/runner/internal/itemtask/remote"
	"github.com/runnerdev/runner/internal/natsconn"
)

// WorkerOptions configure a worker.
type WorkerOptions struct {
	Conn        *nats.Conn
	Queue       string
	Concurrency int           // items at once
	Name        string        // in results and events
	AckWait     time.Duration // of the queue's consumer, when this worker creates it
	Replicas    int           // of the NATS objects, asked for (--nats-replicas); 0: natsconn.DefaultReplicas
	// DrainTimeout is how long a stopping worker lets its items run on
	// (0: until they end); IdleExit ends a worker that got no task for
	// that long (0: never).
	DrainTimeout, IdleExit time.Duration
	StoreDir               string    // where the jobs' copies and item logs go
	Log                    io.Writer // one line per task and per problem
	// LogBeats adds to Log a line per heartbeat the server answered: when
	// it was sent and when its answer came (runner -v worker).
	LogBeats bool
	// SummaryEvery is how often Log gets a line counting the tasks done
	// and running (0: never).
	SummaryEvery time.Duration
	// ProbeEvery is how often the worker asks whether the NATS streams
	// answer, logging when they stop and start again (0:
	// natsconn.ProbeEvery).
	ProbeEvery time.Duration
	// Watchdog is the command that serves ServeWatchdog (this
	// executable's), given the directory of its marks as its last
	// argument; nil: no watchdog, the heartbeat check alone stops runs
	// whose lease ran out.
	Watchdog []string
	// Open opens a job whose tasks come, from the portable form its spec
	// carries (itemtask.Job.Portable), in dir, a directory of the worker's
	// own; its steps' events go to emit, its items' output to live (nil
	// when the job's coordinator shows none). Its error says why this worker
	// cannot run the job's items (a secret it lacks). What it runs (the
	// job's env commands) ends with ctx. The engine's
	// itemrun.OpenPortable.
	Open func(ctx context.Context, portable json.RawMessage, dir string, emit func(eventlog.Event), live *itemtask.Live) (itemtask.Opened, error)
}

// Worker pulls the tasks of one queue and runs them (SPEC §11.2).
type Worker struct {
	opts    WorkerOptions
	js      jetstream.JetStream
	objs    *natsconn.Objects
	tasks   jetstream.Consumer
	ackWait time.Duration // the consumer's, as the server has it
	slots   itemtask.Slots
	wd      *watchdog // nil without one
	seq     atomic.Uint64
	tally   tally
	// delaying counts the runs whose slot is given back while a step
	// waits out a delay: the worker then pulls in short waits, so that
	// the slot it holds to pull is soon free for them again.
	delaying atomic.Int64

	mu        sync.Mutex
	jobs      map[string]*workerJob // by key
	revisions map[string]uint64     // the newest revision of each job's spec the watch saw
	runs      map[*workerRun]struct{}

	logMu sync.Mutex
	gitMu sync.Mutex // one fetch of a tip into the worker's clone at a time
}

// tally counts a worker's tasks for its summary lines.
type tally struct {
	running                    atomic.Int64
	succeeded, failed, stopped atomic.Int64
}

// workerJob is a job as this worker runs its items: opened from its spec
// at one revision of it.
type workerJob struct {
	key      string
	revision uint64
	spec     natsconn.Spec
	opened   itemtask.Opened // zero when unable says why it cannot be opened here
	unable   error
}

// Why a run stops without a result.
var (
	errCutOff      = errors.New("no answer from the NATS server to heartbeats: another worker will get the task")
	errInterrupted = errors.New("the job was interrupted")
	errDrained     = errors.New("the worker stopped before the item ended")
)

// NewWorker connects a worker to its queue, creating the NATS objects it
// needs if they are missing.
func NewWorker(ctx context.Context, opts WorkerOptions) (*Worker, error) {
	if err := natsconn.CheckQueue(opts.Queue); err != nil {
		return nil, err
	}
	js, err := jetstream.New(opts.Conn)
	if err != nil {
		return nil, err
	}
	objs, err := natsconn.OpenObjects(ctx, js, opts.Log, opts.Replicas)
	if err != nil {
		return nil, err
	}
	w := &Worker{opts: opts, js: js, objs: objs, slots: make(itemtask.Slots, max(opts.Concurrency, 1)), jobs: map[string]*workerJob{}, revisions: map[string]uint64{}, runs: map[*workerRun]struct{}{}}
	if err := natsconn.WhileUnanswered(ctx, natsconn.StartWait, func() (err error) {
		w.tasks, err = objs.WorkerTasks(ctx, opts.Queue, cmp.Or(opts.AckWait, natsconn.DefaultAckWait))
		return err
	}); err != nil {
		return nil, err
	}
	w.ackWait = w.tasks.CachedInfo().Config.AckWait
	if len(opts.Watchdog) > 0 {
		if w.wd, err = startWatchdog(opts.Watchdog, filepath.Join(opts.StoreDir, "killed")); err != nil {
			return nil, err
		}
	}
	return w, nil
}

// Run pulls and runs tasks until ctx ends, then lets the items running
// end (within DrainTimeout) and returns nil; or until no task came for
// IdleExit. Nothing it started runs on when it returns.
func (w *Worker) Run(ctx context.Context) error {
	// The items running when ctx ends go on: they drain, and only
	// DrainTimeout stops them.
	runCtx, stopRuns := context.WithCancelCause(context.WithoutCancel(ctx))
	defer stopRuns(nil)
	defer w.wd.close()
	// The watches end with ctx; the summaries go on while the items
	// drain, and log once more as Run returns.
	watchCtx, stopWatch := context.WithCancel(ctx)
	summaries, stopSummaries := context.WithCancel(context.WithoutCancel(ctx))
	var background sync.WaitGroup
	background.Go(func() { w.watchJobs(watchCtx) })
	background.Go(func() { w.watchStreams(watchCtx) })
	background.Go(func() { w.summarize(summaries) })
	defer func() { stopWatch(); stopSummaries(); background.Wait() }()
	runners := newReusedGoroutines(time.Minute)
	idleSince := time.Now()
	for ctx.Err() == nil {
		sl := w.slots.Hold()
		if sl.Acquire(ctx) != nil {
			break
		}
		msg, err := w.pull(ctx, idleSince)
		if err != nil {
			sl.Release()
			w.restore(ctx, err)
			if w.opts.IdleExit > 0 && time.Since(idleSince) >= w.opts.IdleExit && w.idle() {
				break
			}
			continue
		}
		if ctx.Err() != nil { // pulled while stopping: another worker gets it at once
			_ = msg.NakWithDelay(0)
			sl.Release()
			break
		}
		idleSince = time.Now()
		b := w.receive(runCtx, msg)
		if b == nil {
			sl.Release()
			continue
		}
		// The batch's items start as slots come, the first on the slot
		// held for the pull; the next pull waits for them.
		for i, t := range b.tasks {
			hold := sl
			if i > 0 {
				if hold = w.slots.Hold(); hold.Acquire(ctx) != nil {
					b.unstarted(i)
					break
				}
			}
			w.tally.running.Add(1)
			runners.run(func() {
				defer w.tally.running.Add(-1)
				defer hold.Release()
				b.run(t, hold)
			})
		}
	}
	if w.opts.DrainTimeout > 0 {
		drain := time.AfterFunc(w.opts.DrainTimeout, func() { stopRuns(errDrained) })
		defer drain.Stop()
	}
	runners.stop() // once every item has ended
	return nil
}

// pull pulls one task; a pull of a worker that has been idle since
// idleSince ends when IdleExit is up, so that it exits then, and one while
// a run waits out a delay within delayingPull.
func (w *Worker) pull(ctx context.Context, idleSince time.Time) (jetstream.Msg, error) {
	if until := idleSince.Add(w.opts.IdleExit); w.opts.IdleExit > 0 && time.Until(until) > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, until)
		defer cancel()
	}
	if w.delaying.Load() > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, delayingPull)
		defer cancel()
	}
	return natsconn.Next(ctx, w.tasks)
}

// delayingPull bounds a pull while some run waits out a delay with its
// slot given back: it waits at most that long for its slot after the
// delay. The server ends the pull (its expiry): no task is delivered to
// a pull given up.
const delayingPull = 500 * time.Millisecond

// summarize logs a summary every SummaryEvery until ctx ends, and once
// more then (as the worker stops).
func (w *Worker) summarize(ctx context.Context) {
	if w.opts.SummaryEvery <= 0 {
		return
	}
	tick := time.NewTicker(w.opts.SummaryEvery)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			w.logSummary()
			return
		case <-tick.C:
			w.logSummary()
		}
	}
}

// logSummary logs the tasks this worker ended since it started, and those
// running now.
func (w *Worker) logSummary() {
	t := &w.tally
	ok, failed, stopped := t.succeeded.Load(), t.failed.Load(), t.stopped.Load()
	w.logf("%d tasks ended since the start (%d succeeded, %d failed, %d stopped); %d of %d slots busy",
		ok+failed+stopped, ok, failed, stopped, t.running.Load(), cap(w.slots))
}

// restore makes the streams and the queue's consumer again when a pull
// failed because the server lost them (restarted on an empty store): the
// worker pulls again from the new consumer, and can store results. The
// jobs bucket is the coordinators' to make again, with their specs in it:
// until then a task of a job this worker has not seen waits (see receive).
func (w *Worker) restore(ctx context.Context, pullErr error) {
	if !w.objs.Lost(ctx, pullErr, natsconn.TasksStream, natsconn.WorkersConsumer(w.opts.Queue)) {
		return
	}
	w.logf("the NATS server lost queue %s's consumer (restarted on an empty store?): making the streams and the consumer again", w.opts.Queue)
	objs := w.objs.Remade()
	err := objs.OpenStreams(ctx)
	if err == nil {
		var c jetstream.Consumer
		if c, err = objs.WorkerTasks(ctx, w.opts.Queue, w.ackWait); err == nil {
			w.tasks = c
		}
	}
	if err != nil {
		w.logf("%v", err)
	}
}

// idle reports whether no item is running, including one that waits out a
// delay with its slot given back.
func (w *Worker) idle() bool { return len(w.slots) == 0 && w.delaying.Load() == 0 }

// logTask logs the result of a task that took d, and counts it.
func (w *Worker) logTask(t natsconn.Task, r natsconn.Result, d time.Duration) {
	which := fmt.Sprintf("job %s item %s%s", t.JobID, t.ItemID, attemptNote(t.Attempt))
	if r.Failed {
		w.tally.failed.Add(1)
		w.logf("%s: failed in %s: %s", which, roundDuration(d), firstLine(r.Failure.Message))
		return
	}
	w.tally.succeeded.Add(1)
	w.logf("%s: succeeded in %s", which, roundDuration(d))
}

// attemptNote names an attempt after the first, for a task's line.
func attemptNote(attempt int) string {
	if attempt <= 1 {
		return ""
	}
	return fmt.Sprintf(" (attempt %d)", attempt)
}

// roundDuration is d as precise as a task's line needs.
func roundDuration(d time.Duration) time.Duration {
	if d < time.Second {
		return d.Round(time.Millisecond)
	}
	return d.Round(100 * time.Millisecond)
}

// firstLine is the first line of s, with "…" when there is more.
func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i] + " …"
	}
	return s
}

// running reports whether the item itemID of the job of key runs here.
func (w *Worker) running(key, itemID string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	for run := range w.runs {
		if run.b.key == key && run.task.ItemID == itemID {
			return true
		}
	}
	return false
}

// announce tells the coordinator of the job of key that this worker runs
// t, in its delivery-th delivery (a beat).
func (w *Worker) announce(key string, t natsconn.Task, delivery int) {
	body, err := json.Marshal(natsconn.Beat{Index: t.Index, Attempt: t.Attempt, Worker: w.opts.Name, Delivery: delivery, AckWaitMS: w.ackWait.Milliseconds()})
	if err == nil {
		_ = w.opts.Conn.PublishMsg(natsconn.NewMsg(natsconn.BeatSubject(key), t.JobID, body))
	}
}

// job returns the job of key as its spec in RUNNER_JOBS has it now,
// opening it again when the spec changed. A running job's spec is read once per revision: the watch of RUNNER_JOBS
// tells of newer ones (an interrupted or a resumed job's), and a spec that
// does not say running is read again every time.
func (w *Worker) job(ctx context.Context, key string) (*workerJob, error) {
	w.mu.Lock()
	wj, ok := w.jobs[key]
	fresh := ok && wj.spec.Status == natsconn.StatusRunning && wj.revision >= w.revisions[key]
	w.mu.Unlock()
	if fresh {
		return wj, nil
	}
	cctx, cancel := context.WithTimeout(ctx, natsconn.CallDeadline)
	entry, err := w.objs.Jobs.Get(cctx, key)
	cancel()
	if err != nil {
		return nil, err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if wj, ok := w.jobs[key]; ok && wj.revision == entry.Revision() {
		return wj, nil
	}
	var sp natsconn.Spec
	if err := json.Unmarshal(entry.Value(), &sp); err != nil {
		return nil, fmt.Errorf("its spec: %w", err)
	}
	if sp.Proto != natsconn.Proto {
		return nil, fmt.Errorf("its spec speaks protocol %q, this worker %q", sp.Proto, natsconn.Proto)
	}
	wj = &workerJob{key: key, revision: entry.Revision(), spec: sp}
	if sp.Status == natsconn.StatusRunning {
		wj.unable = w.open(ctx, wj)
	}
	w.jobs[key] = wj
	return wj, nil
}

// open makes the job's copy in the worker's store, one per revision of
// its spec (runs of an older one may go on in theirs), and its template
// runner; its error says why this worker cannot run the job's items (a
// secret it lacks, an environment it cannot resolve). It is called with
// w.mu held.
func (w *Worker) open(ctx context.Context, wj *workerJob) error {
	emit := func(e eventlog.Event) {
		w.mu.Lock()
		defer w.mu.Unlock()
		for run := range w.runs {
			if run.b.key == wj.key && run.task.ItemID == e.ItemID {
				e := e.Redacted(wj.opened.Mask)
				run.events = append(run.events, e)
				run.report.Emit(e)
			}
		}
	}
	dir := filepath.Join(w.opts.StoreDir, wj.key+"-"+strconv.FormatUint(wj.revision, 10))
	var live *itemtask.Live
	if wj.spec.Live {
		live = remote.Output(natsconn.ProgressTransport{Conn: w.opts.Conn, Key: wj.key}, func(s string) string { return wj.opened.Mask(s) })
	}
	opened, err := w.opts.Open(ctx, wj.spec.Job, dir, emit, live)
	if err != nil {
		return err
	}
	wj.opened = opened
	return nil
}

// watchJobs stops the runs of a job whose spec says it was interrupted,
// or is gone, until ctx ends.
func (w *Worker) watchJobs(ctx context.Context) {
	for ctx.Err() == nil {
		watcher, err := w.objs.Jobs.WatchAll(ctx, jetstream.UpdatesOnly())
		if err != nil {
			select {
			case <-ctx.Done():
			case <-time.After(time.Second):
			}
			continue
		}
		// Not a range over the updates: the watcher does not always close
		// them when ctx ends (a stopping worker's Run hung on it).
		updates := watcher.Updates()
		for open := true; open && ctx.Err() == nil; {
			select {
			case <-ctx.Done():
			case entry, ok := <-updates:
				if open = ok; ok && entry != nil {
					w.jobChanged(entry)
				}
			}
		}
		_ = watcher.Stop()
	}
}

// jobChanged takes in a change to a job's spec: its runs stop unless it
// says running.
func (w *Worker) jobChanged(entry jetstream.KeyValueEntry) {
	var sp natsconn.Spec
	gone := entry.Operation() != jetstream.KeyValuePut
	w.noteRevision(entry.Key(), entry.Revision(), gone)
	if gone || json.Unmarshal(entry.Value(), &sp) != nil || sp.Status != natsconn.StatusRunning {
		w.stopJob(entry.Key())
	}
}

// noteRevision records a change to a job's spec that the watch saw: a
// cached spec older than rev is read again; a deleted job is forgotten.
func (w *Worker) noteRevision(key string, rev uint64, gone bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if gone {
		delete(w.jobs, key)
		delete(w.revisions, key)
		return
	}
	w.revisions[key] = max(w.revisions[key], rev)
}

// stopJob stops every run of the job of key: its items' process groups
// get TERM, then KILL after their grace.
func (w *Worker) stopJob(key string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for run := range w.runs {
		if run.b.key == key {
			run.cancel(errInterrupted)
		}
	}
}

func (w *Worker) logf(format string, args ...any) {
	if w.opts.Log == nil {
		return
	}
	w.logMu.Lock()
	defer w.logMu.Unlock()
	fmt.Fprintf(w.opts.Log, "runner worker %s: "+format+"\n", append([]any{w.opts.Name}, args...)...)
}

// tail is the last n bytes of s.
func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[len(s)-n:]
}

func fileSize(path string) int64 {
	fi, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return fi.Size()
}

// readTail reads what path gained from offset from on, at most n bytes
// (its end), after a line saying how many bytes it left out before them.
func readTail(path string, from int64, n int) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	size := fileSize(path)
	start := max(from, size-int64(n))
	buf := make([]byte, size-start)
	k, _ := f.ReadAt(buf, start)
	if start > from {
		return fmt.Sprintf("[runner: the first %d bytes of this attempt's output left out, its last %d follow]\n", start-from, k) + string(buf[:k])
	}
	return string(buf[:k])
}
