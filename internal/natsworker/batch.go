package natsworker

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/runnerdev/runner/internal/eventlog"
	"github.com/runnerdev/runner/internal/itemtask"
	"github.com/runnerdev/runner/internal/itemtask/remote"
	"github.com/runnerdev/runner/internal/natsconn"
	"github.com/runnerdev/runner/internal/proc"
)

// batch is one task message (natsconn.Batch) as this worker runs it:
// its items run at once, each on a slot of its own, under one lease
// kept by one heartbeat; each item's result is stored as it ends, and
// the message is acknowledged once, when every item has its result.
type batch struct {
	w        *Worker
	msg      jetstream.Msg
	key      string
	wj       *workerJob
	delivery int
	received time.Time
	tasks    []natsconn.Task // those to run: the items a coordinator no longer awaits left out
	ls       *lease
	// ctx is the batch's runs': it ends when the lease runs out (errCutOff).
	ctx       context.Context
	cut       context.CancelCauseFunc
	stopBeats func()

	// Guarded by Worker.mu, with the worker's runs:
	left  int     // items not ended
	worst stopped // of the items ended: how the message is settled
}

// workerRun is one of a batch's tasks running: its events, and how to
// stop it. The worker's runs are what a heartbeat announces, and where
// the job's events go.
type workerRun struct {
	b      *batch
	task   natsconn.Task
	events []eventlog.Event // redacted; guarded by Worker.mu
	report *remote.Reporter // tells the coordinator as they come
	cancel context.CancelCauseFunc
}

// receive reads a task message into a batch ready to run, or settles it
// (not acknowledged, dropped or handed back) and returns nil: it is not
// one this worker can run now. The batch's lease and heartbeats start as
// soon as the message is read: the server counts its ack_wait from the
// delivery, and fetching the job's spec or asking which items are still
// awaited takes a while on a loaded machine.
func (w *Worker) receive(ctx context.Context, msg jetstream.Msg) *batch {
	b := &batch{w: w, msg: msg, received: time.Now(), delivery: 1}
	if msg.Headers().Get(natsconn.HeaderProto) != natsconn.Proto {
		_ = msg.NakWithDelay(5 * time.Second) // a worker that speaks it may come
		return nil
	}
	var body natsconn.Batch
	b.key = natsconn.SubjectKey(msg.Subject())
	if err := json.Unmarshal(msg.Data(), &body); err != nil || b.key == "" || len(body.Tasks) == 0 {
		_ = msg.TermWithReason("unreadable task")
		return nil
	}
	if meta, err := msg.Metadata(); err == nil {
		b.delivery = int(meta.NumDelivered)
	}
	b.tasks = body.Tasks
	b.ls = newLease(w.wd, w.ackWait-2*w.heartbeat(), b.received)
	b.ctx, b.cut = context.WithCancelCause(ctx)
	b.stopBeats = b.beat()
	if settle := b.unrunnable(ctx); settle != nil {
		b.stopBeats()
		b.cut(nil)
		settle()
		return nil
	}
	b.left = len(b.tasks)
	return b
}

// unrunnable returns nil when the batch has items to run here now, and
// else how to settle its message.
func (b *batch) unrunnable(ctx context.Context) (settle func()) {
	w, msg, jobID := b.w, b.msg, b.tasks[0].JobID
	var err error
	b.wj, err = w.job(ctx, b.key)
	switch {
	case errors.Is(err, jetstream.ErrKeyNotFound):
		return func() { _ = msg.TermWithReason("unknown job") }
	case err != nil:
		w.logf("job %s: %v", jobID, err)
		return func() { _ = msg.NakWithDelay(5 * time.Second) }
	case b.wj.spec.Status != natsconn.StatusRunning:
		return func() { _ = msg.TermWithReason("job " + b.wj.spec.Status) }
	}
	for _, t := range b.tasks {
		if w.running(b.key, t.ItemID) {
			// Delivered again while it runs here (a server restarted on
			// its store forgets deliveries): a second run would make its
			// worktree and branch in the same clone at once. It comes
			// back once this run has ended, and its result is dropped
			// then.
			w.logf("job %s item %s: delivered again while it runs here; it comes back in %s", t.JobID, t.ItemID, w.ackWait)
			return func() { _ = msg.NakWithDelay(w.ackWait) }
		}
	}
	if b.delivery > 1 {
		b.tasks = w.awaited(ctx, b.key, b.tasks)
	}
	if len(b.tasks) == 0 {
		return func() { _ = natsconn.AckElected(ctx, msg) } // every result is recorded
	}
	return nil
}

// name names the batch's items in the worker's log: "J item I", or
// "J items I1,I2" for several.
func (b *batch) name() string {
	if len(b.tasks) == 1 {
		return b.tasks[0].JobID + " item " + b.tasks[0].ItemID
	}
	ids := make([]string, len(b.tasks))
	for i, t := range b.tasks {
		ids[i] = t.ItemID
	}
	return b.tasks[0].JobID + " items " + strings.Join(ids, ",")
}

// awaited are those of tasks, delivered again, whose results their
// coordinator still awaits and are not stored: the others' are recorded
// (or nothing waits for them), or on their way, and they are not run
// again. With no answer (no coordinator runs the job now) those whose
// results are not stored run.
func (w *Worker) awaited(ctx context.Context, key string, tasks []natsconn.Task) []natsconn.Task {
	q := natsconn.Awaited{Items: make([]natsconn.AwaitedItem, len(tasks))}
	for i, t := range tasks {
		q.Items[i] = natsconn.AwaitedItem{Index: t.Index, Attempt: t.Attempt, Epoch: t.Epoch}
	}
	data, err := json.Marshal(q)
	if err != nil {
		return tasks
	}
	rctx, cancel := context.WithTimeout(ctx, natsconn.CallDeadline)
	defer cancel()
	reply, err := w.opts.Conn.RequestWithContext(rctx, natsconn.AwaitedSubject(key), data)
	var a natsconn.Awaited
	if err != nil || json.Unmarshal(reply.Data, &a) != nil || len(a.Awaited) != len(tasks) {
		a.Awaited = nil // no answer: each runs unless its result is stored
	}
	var run []natsconn.Task
	for i, t := range tasks {
		switch {
		case a.Awaited != nil && !a.Awaited[i]:
			w.logf("job %s item %s: delivered again with its batch, its result already recorded: not run again", t.JobID, t.ItemID)
		case w.stored(ctx, key, t):
			w.logf("job %s item %s: delivered again with its batch, its result already stored: not run again", t.JobID, t.ItemID)
		default:
			run = append(run, t)
		}
	}
	return run
}

// stored reports whether the results stream holds a result of t's
// attempt, sent in t's epoch: its coordinator takes it from there (its
// delivery, or reconcile), and t need not run again.
func (w *Worker) stored(ctx context.Context, key string, t natsconn.Task) bool {
	ctx, cancel := context.WithTimeout(ctx, natsconn.CallDeadline)
	defer cancel()
	raw, err := w.objs.Results.GetLastMsgForSubject(ctx, natsconn.ResultSubject(key, t.Index))
	if err != nil {
		return false
	}
	var r natsconn.Result
	return json.Unmarshal(raw.Data, &r) == nil && r.Index == t.Index && r.Attempt == t.Attempt && r.Epoch == t.Epoch
}

// announce tells the coordinator which of the batch's items run here.
func (b *batch) announce() {
	b.w.mu.Lock()
	defer b.w.mu.Unlock()
	for run := range b.w.runs {
		if run.b == b {
			b.w.announce(b.key, run.task, b.delivery)
		}
	}
}

// run runs t, one of the batch's tasks, on slot sl to its result, and
// stores the result.
func (b *batch) run(t natsconn.Task, sl *itemtask.Hold) {
	w := b.w
	r := natsconn.Result{Index: t.Index, ItemID: t.ItemID, Attempt: t.Attempt, Epoch: t.Epoch, Sent: t.Sent, Worker: w.opts.Name, Delivery: b.delivery}
	stop := stopNone
	switch {
	case b.delivery > t.MaxDeliveries && t.MaxDeliveries > 0:
		r.Failed, r.Failure = true, &itemtask.Failure{Attempt: t.Attempt, At: time.Now(), Kind: itemtask.KindLost, ExitCode: -1,
			Message: fmt.Sprintf("its task was delivered %d times, over max_deliveries %d: the workers running it died or were cut off from the NATS server", b.delivery, t.MaxDeliveries)}
	case b.wj.unable != nil:
		r.Failed, r.Failure = true, &itemtask.Failure{Attempt: t.Attempt, At: time.Now(), Kind: "spawn", ExitCode: -1, Message: b.wj.unable.Error()}
	default:
		r, stop = b.exec(t, sl, r)
	}
	if stop == stopNone && !b.store(t, r) {
		stop = stopUnstored
	}
	b.end(stop)
}

// exec runs the item of t, one of the batch's tasks, with its job's
// template, under the batch's lease, announcing it to the coordinator. It
// reports how the run stopped when it did without a result to send: the
// job was interrupted, the server stopped answering, or the worker
// stopped.
func (b *batch) exec(t natsconn.Task, sl *itemtask.Hold, r natsconn.Result) (natsconn.Result, stopped) {
	w, wj, ls := b.w, b.wj, b.ls
	started := time.Now()
	rctx, cancel := context.WithCancelCause(b.ctx)
	defer cancel(nil)
	rp := remote.NewReporter(natsconn.ProgressTransport{Conn: w.opts.Conn, Key: wj.key},
		remote.Run{Index: t.Index, Attempt: t.Attempt, Epoch: t.Epoch, Sent: t.Sent, Delivery: r.Delivery, Worker: w.opts.Name}, holdBack)
	run := &workerRun{b: b, task: t, cancel: cancel, report: rp}
	w.mu.Lock()
	w.runs[run] = struct{}{}
	w.mu.Unlock()
	w.announce(b.key, t, b.delivery)
	defer func() {
		w.mu.Lock()
		delete(w.runs, run)
		w.mu.Unlock()
	}()
	logPath := wj.opened.LogPath(t.ItemID)
	logStart := fileSize(logPath)
	mt := itemtask.Task{
		JobID: t.JobID, Index: t.Index, ItemID: t.ItemID, Item: t.Item, Attempt: t.Attempt, Total: t.Total,
		DispatchID: w.opts.Name + "/" + strconv.FormatUint(w.seq.Add(1), 10), Seed: wj.spec.Seed,
	}
	var out itemtask.Outcome
	var ig *natsconn.ItemGit
	var err error
	if mt.Checkpoints, err = rp.Start(rctx, t.Checkpoints); err == nil {
		slot := &runSlot{rp: rp, own: sl, waiting: &w.delaying}
		save := func(rec itemtask.StepRecord) error {
			if last := wj.opened.Last; last != nil && last(rec) {
				r.LastStep = &rec // nothing runs after it: it goes with the result
				return nil
			}
			return rp.Save(rctx, rec)
		}
		out, ig, err = w.runItem(proc.WithGroupHook(rctx, ls.hook), wj, t, mt, slot, save, r.Delivery)
		slot.end()
	}
	if err == nil && ls.expired(time.Now()) {
		// Frozen or cut off past the lease: the task may be another
		// worker's by now, and this run may have been killed.
		cancel(errCutOff)
	}
	if err != nil || context.Cause(rctx) != nil {
		rp.Flush() // no result carries the run's events
		cause := context.Cause(rctx)
		stop := stopUnstored
		var ref *remote.Refusal
		switch {
		case errors.Is(cause, errDrained):
			stop = stopDrained
		case errors.As(err, &ref) && ref.Term:
			stop = stopTerm
		}
		w.tally.stopped.Add(1)
		w.logf("job %s item %s%s: stopped after %s: %v", t.JobID, t.ItemID, attemptNote(t.Attempt), roundDuration(time.Since(started)), cmp.Or(cause, err))
		return r, stop
	}
	rp.Drop() // the result carries the run's events
	mask := wj.opened.Mask
	r.Output = tail(mask(out.Output), natsconn.MaxOutput)
	r.DurationMS, r.Usage = out.Duration.Milliseconds(), out.Usage
	r.Git = ig
	if out.Failed {
		f := out.Failure
		f.Message, f.StderrTail = mask(f.Message), mask(f.StderrTail)
		r.Failed, r.Failure = true, &f
	}
	w.mu.Lock()
	r.Events = slices.Clip(run.events)
	w.mu.Unlock()
	r.LogTail = mask(readTail(logPath, logStart, natsconn.MaxLogTail))
	return r, stopNone
}

// store stores t's result r; it reports false when it could not.
func (b *batch) store(t natsconn.Task, r natsconn.Result) bool {
	w := b.w
	body, err := r.Trim()
	if err != nil {
		w.logf("item %s: %v", t.ItemID, err)
		return false
	}
	m := natsconn.NewMsg(natsconn.ResultSubject(b.key, t.Index), t.JobID, body)
	// The run ended: its result is stored even when the worker is
	// stopping meanwhile.
	pctx, cancel := context.WithTimeout(context.WithoutCancel(b.ctx), w.ackWait)
	defer cancel()
	if err := natsconn.Publish(pctx, w.js, m, natsconn.ResultMsgID(b.key, t.Index, t.Attempt, t.Epoch)); err != nil {
		w.logf("item %s: result not stored, the task will run again: %v", t.ItemID, err)
		return false
	}
	w.logTask(t, r, time.Since(b.received))
	return true
}

// stopped is how a run of a batch's item ended without a result stored,
// from the mildest: the worst of its items' settles the message.
type stopped uint8

const (
	stopNone     stopped = iota // it has its result
	stopTerm                    // the coordinator said its attempt is over: nothing runs it again
	stopUnstored                // its run was cut off, or its result not stored: the message comes back after ack_wait
	stopDrained                 // the worker stopped: the message goes to another at once
)

// end counts one of the batch's items ended as stop says; after the last,
// the message is acknowledged when every item has its result (or its
// attempt is over), else handed back at once when the worker stopped
// some, else left to come back after its ack_wait.
func (b *batch) end(stop stopped) {
	b.w.mu.Lock()
	b.left--
	b.worst = max(b.worst, stop)
	last, worst := b.left == 0, b.worst
	b.w.mu.Unlock()
	if !last {
		return
	}
	b.stopBeats()
	b.cut(nil)
	switch {
	case worst == stopDrained:
		_ = b.msg.NakWithDelay(0)
	case worst == stopUnstored:
	case worst == stopTerm && len(b.tasks) == 1:
		_ = b.msg.TermWithReason("its attempt is over")
	default:
		// Not the run's context: a worker that drains (a signal) still
		// acknowledges what it finished, or it runs again elsewhere.
		ctx, cancel := context.WithTimeout(context.Background(), b.w.ackWait)
		defer cancel()
		if err := natsconn.AckElected(ctx, b.msg); err != nil {
			// The message comes back; the coordinator answers that its
			// items' results are recorded, or drops them (first result
			// per attempt wins).
			b.w.logf("job %s: task message of %d items not acknowledged: %v", b.wj.spec.JobID, len(b.tasks), err)
		}
	}
}

// unstarted ends the batch's items from the n-th on, which the worker,
// stopping, did not start: the message goes to another worker at once.
func (b *batch) unstarted(n int) {
	for range b.tasks[n:] {
		b.end(stopDrained)
	}
}
