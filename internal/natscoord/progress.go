package natscoord

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"sync"

	"github.com/nats-io/nats.go"

	"github.com/runnerdev/runner/internal/eventlog"
	"github.com/runnerdev/runner/internal/itemtask"
	"github.com/runnerdev/runner/internal/natsconn"
)

// tracker hears how the runs of a job's tasks go, on runner.progress.J
// (natsconn.Progress), and reports it to the job's Host as it comes: each
// step is saved before the worker starts the next, events are recorded
// while the task runs, the job's slot is given back during a step's delay.
// Only the dispatches that wait for their results are heard: what comes
// for another (an older attempt, a delivery the server gave again to
// another worker since) is refused or dropped.
type tracker struct {
	host itemtask.Host
	live *itemtask.Live // shows the items' output as it comes; nil: nowhere
	conn *nats.Conn
	sub  *nats.Subscription

	mu   sync.Mutex
	runs map[int]*progress // by item index
	// interrupted says that the job was interrupted: a run no dispatch
	// waits for is stopped rather than left to go on (interrupt).
	interrupted bool
}

// progress is what one dispatch learned from the runs of its task.
type progress struct {
	task   itemtask.Task
	ctx    context.Context // ends with the dispatch
	cancel context.CancelFunc
	// abort tells the dispatch that the host refused a checkpoint: the
	// task stops without an outcome.
	abort chan error // buffered, one
	// run is the newest run of the task heard from; older ones are
	// refused.
	run natsconn.RunID
	// sent counts the times the task was published.
	sent int
	// emitted counts the events of each run recorded live: the result's
	// events after them are recorded with it.
	emitted map[natsconn.RunID]int
	// checkpoints are the task's and those saved since, for a delivery
	// that starts after them.
	checkpoints []itemtask.StepRecord
	// released says that the job's slot is given back (a step waits out
	// a delay); acquiring that a goroutine takes it back, which answers
	// the request pending when it holds it.
	released, acquiring bool
	pending             slotRequest
	// ended says that the dispatch is over: the slot is the engine's
	// again, and taking it (slotWork) is waited for before.
	ended    bool
	slotWork sync.WaitGroup
}

// trackProgress subscribes to the progress of the tasks of the job of key,
// showing their output on live (nil: nowhere).
func trackProgress(conn *nats.Conn, key string, host itemtask.Host, live *itemtask.Live) (*tracker, error) {
	tr := &tracker{host: host, live: live, conn: conn, runs: map[int]*progress{}}
	sub, err := conn.Subscribe(natsconn.ProgressSubject(key), tr.receive)
	if err != nil {
		return nil, err
	}
	tr.sub = sub
	// The server has the subscription before anything is published: no
	// run's question finds no one to answer it.
	if err := conn.FlushTimeout(natsconn.CallDeadline); err != nil {
		_ = sub.Unsubscribe()
		return nil, err
	}
	return tr, nil
}

// interrupt stops, from now on, the runs that no dispatch waits for: a
// run whose delay ends while the interrupted job winds down would
// otherwise take up its next step without one of the job's slots and be
// stopped in it when its worker hears of the interrupt, so that the step
// runs again on resume (more than the max_parallel steps executing at the
// interrupt would).
func (tr *tracker) interrupt() {
	tr.mu.Lock()
	tr.interrupted = true
	tr.mu.Unlock()
}

// close stops hearing progress.
func (tr *tracker) close() { _ = tr.sub.Unsubscribe() }

// track starts hearing the runs of t, until untrack; emitted counts the
// events of each of its runs recorded so far (by an ended process).
func (tr *tracker) track(ctx context.Context, t itemtask.Task, emitted map[natsconn.RunID]int) *progress {
	p := &progress{task: t, abort: make(chan error, 1), emitted: maps.Clone(emitted), checkpoints: t.Checkpoints}
	if p.emitted == nil {
		p.emitted = map[natsconn.RunID]int{}
	}
	p.ctx, p.cancel = context.WithCancel(ctx)
	tr.mu.Lock()
	tr.runs[t.Index] = p
	tr.mu.Unlock()
	return p
}

// untrack stops hearing the runs of p's task.
func (tr *tracker) untrack(p *progress) {
	tr.mu.Lock()
	p.ended = true
	if tr.runs[p.task.Index] == p {
		delete(tr.runs, p.task.Index)
	}
	tr.mu.Unlock()
	p.cancel()
	p.slotWork.Wait()
}

// sending is what a task of t sent now carries: the steps saved so far by
// the runs of its attempt, and the times it was sent before.
func (tr *tracker) sending(t itemtask.Task) (checkpoints []itemtask.StepRecord, sent int) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	p := tr.runs[t.Index]
	if p == nil || p.task.Attempt != t.Attempt {
		return t.Checkpoints, 0
	}
	p.sent++
	return p.checkpoints, p.sent - 1
}

// taskBody is the body of task's message, without its checkpoints when
// they would make it too large for NATS: its worker asks for them at its
// start.
func taskBody(task natsconn.Task) ([]byte, error) {
	body, err := json.Marshal(task)
	if err == nil && len(body) > natsconn.MaxTask && len(task.Checkpoints) > 0 {
		task.Checkpoints = nil
		body, err = json.Marshal(task)
	}
	return body, err
}

// unemitted are the events of r that were not recorded live (by this
// process, or by an ended one: emitted, for a run this process did not
// hear), in order, and the place of the first among its run's events
// (from 1).
func (tr *tracker) unemitted(index int, r natsconn.Result, emitted map[natsconn.RunID]int) (events []eventlog.Event, first int) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if p := tr.runs[index]; p != nil && p.task.Attempt == r.Attempt {
		emitted = p.emitted
	}
	if emitted == nil {
		return r.Events, 1
	}
	n := min(emitted[r.RunID()], len(r.Events))
	emitted[r.RunID()] = len(r.Events) // a late live event is not recorded twice
	return r.Events[n:], n + 1
}

// receive handles one progress message.
func (tr *tracker) receive(msg *nats.Msg) {
	var pr natsconn.Progress
	if err := json.Unmarshal(msg.Data, &pr); err != nil {
		return // not progress this runner can read: its run goes on unheard
	}
	if pr.Kind == natsconn.ProgressOutput {
		tr.show(pr)
		return
	}
	p, refusal := tr.find(pr)
	if p == nil {
		tr.respond(msg.Reply, refusal)
		return
	}
	switch pr.Kind {
	case natsconn.ProgressStart:
		tr.start(msg.Reply, p)
	case natsconn.ProgressEvent:
		tr.emit(p, pr)
	case natsconn.ProgressCheckpoint:
		tr.checkpoint(msg.Reply, p, pr)
	case natsconn.ProgressRelease:
		tr.release(p)
	case natsconn.ProgressAcquire:
		tr.acquire(slotRequest{reply: msg.Reply}, p)
	}
}

// start answers a run's start with the checkpoints it goes on after. A
// run that starts while its task's slot is given back (the run before it
// was lost during a delay) first waits for the slot, as that run would
// have.
func (tr *tracker) start(reply string, p *progress) {
	tr.mu.Lock()
	wait := p.released || p.acquiring
	checkpoints := p.checkpoints
	tr.mu.Unlock()
	if wait {
		tr.acquire(slotRequest{reply: reply, start: true}, p)
		return
	}
	tr.respond(reply, natsconn.ProgressReply{Checkpoints: checkpoints})
}

// show shows lines of an item's output, as they come from any run: the
// lines of a run given up are shown as a local item's are.
func (tr *tracker) show(pr natsconn.Progress) {
	if tr.live == nil {
		return
	}
	w := tr.live.Stdout
	if pr.Stream == "stderr" {
		w = tr.live.Stderr
	}
	_, _ = io.WriteString(w, pr.Text)
}

// find is the dispatch that waits for the run pr tells of; nil with the
// answer to give when none does.
func (tr *tracker) find(pr natsconn.Progress) (*progress, natsconn.ProgressReply) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	p := tr.runs[pr.Index]
	switch {
	case p == nil && tr.interrupted:
		return nil, natsconn.ProgressReply{Error: "the job was interrupted: resume goes on after its saved steps"}
	case p == nil || pr.Attempt > p.task.Attempt:
		return nil, natsconn.ProgressReply{Unknown: true}
	case pr.Attempt < p.task.Attempt:
		return nil, natsconn.ProgressReply{Error: fmt.Sprintf("attempt %d of item %s is over: %v", pr.Attempt, p.task.ItemID, itemtask.ErrStale), Term: true}
	case pr.RunID().Before(p.run):
		return nil, natsconn.ProgressReply{Error: fmt.Sprintf("item %s's task was delivered again since (delivery %d)", p.task.ItemID, p.run.Delivery)}
	}
	p.run = pr.RunID()
	return p, natsconn.ProgressReply{}
}

// emit records an event of p's task that comes next in its delivery's
// order; one after a gap (events lost on the way) waits for the result,
// which carries them all.
func (tr *tracker) emit(p *progress, pr natsconn.Progress) {
	tr.mu.Lock()
	next := pr.Event != nil && pr.Seq == p.emitted[pr.RunID()]+1
	if next {
		p.emitted[pr.RunID()] = pr.Seq
	}
	tr.mu.Unlock()
	if next {
		_ = tr.host.Emit(p.task.DispatchID, pr.Event.WithWorker(pr.Worker, pr.Delivery).WithRun(pr.RunID().String(), pr.Seq)) // ErrStale: the item moved on
	}
}

// checkpoint saves a step of p's task and answers: a step the host
// refuses stops the task, here and on its worker.
func (tr *tracker) checkpoint(reply string, p *progress, pr natsconn.Progress) {
	if pr.Step == nil {
		tr.respond(reply, natsconn.ProgressReply{Error: "a checkpoint without a step"})
		return
	}
	if err := tr.host.Checkpoint(p.task.DispatchID, *pr.Step); err != nil {
		select {
		case p.abort <- err:
		default:
		}
		tr.respond(reply, natsconn.ProgressReply{Error: err.Error(), Term: true})
		return
	}
	tr.mu.Lock()
	p.checkpoints = withStep(p.checkpoints, *pr.Step)
	tr.mu.Unlock()
	tr.respond(reply, natsconn.ProgressReply{})
}

// withStep is steps with rec in place of the record of its step, if any.
func withStep(steps []itemtask.StepRecord, rec itemtask.StepRecord) []itemtask.StepRecord {
	out := make([]itemtask.StepRecord, 0, len(steps)+1)
	for _, s := range steps {
		if s.Index != rec.Index {
			out = append(out, s)
		}
	}
	return append(out, rec)
}

// release gives p's slot back while its step waits out a delay. One that
// is being taken back already stays held: the release is older than the
// acquire that a lost answer made the worker ask again. It is done under
// tr.mu, as the dispatch's end is marked: the slot is the engine's once
// the dispatch is over.
func (tr *tracker) release(p *progress) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if p.acquiring || p.ended {
		return
	}
	if s := tr.host.Slot(p.task.DispatchID); s != nil {
		s.Release()
		p.released = true
	}
}

// slotRequest is a request that waits for the job's slot: an acquire, or
// a start (answered with the checkpoints).
type slotRequest struct {
	reply string
	start bool
}

// acquire takes p's slot back and then answers req. Asked again while it
// waits (the worker's request timed out, or a new delivery starts), it
// answers the last request once it holds the slot.
func (tr *tracker) acquire(req slotRequest, p *progress) {
	tr.mu.Lock()
	p.pending = req
	busy := p.acquiring || p.ended
	p.acquiring = true
	if !busy {
		p.slotWork.Add(1)
	}
	tr.mu.Unlock()
	if busy {
		return // answered when the slot is held, or not at all once the dispatch ended
	}
	go func() {
		defer p.slotWork.Done()
		err := itemtask.ErrStale
		if s := tr.host.Slot(p.task.DispatchID); s != nil {
			err = s.Acquire(p.ctx)
		}
		tr.mu.Lock()
		p.acquiring = false
		p.released = p.released && err != nil
		req := p.pending
		answer := natsconn.ProgressReply{Error: errorText(err)}
		if req.start && err == nil {
			answer.Checkpoints = p.checkpoints
		}
		tr.mu.Unlock()
		tr.respond(req.reply, answer)
	}()
}

// respond answers a request (nothing for a published message). An answer
// lost on the way leaves the worker to go on, or ask again, after its
// bounded wait.
func (tr *tracker) respond(reply string, r natsconn.ProgressReply) {
	if reply == "" {
		return
	}
	if data, err := json.Marshal(r); err == nil {
		_ = tr.conn.Publish(reply, data)
	}
}

// errorText is err's message, or "" for nil.
func errorText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
