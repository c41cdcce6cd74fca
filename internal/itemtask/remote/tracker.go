package remote

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"sync"

	"github.com/runnerdev/runner/internal/eventlog"
	"github.com/runnerdev/runner/internal/itemtask"
)

// Tracker hears how the runs of a job's tasks go and reports it to the
// job's Host as it comes: each step is saved before the run starts the
// next, events are recorded while the task runs, the job's slot is given
// back during a step's delay. Only the dispatches that wait for their
// runs are heard (Track): what comes for another (an older attempt or
// dispatch, a run older than one heard since) is refused or dropped.
type Tracker struct {
	host itemtask.Host
	live *itemtask.Live // shows the items' output as it comes; nil: nowhere

	mu   sync.Mutex
	runs map[int]*Progress // by item index
	// interrupted says that the job was interrupted: a run no dispatch
	// waits for is stopped rather than left to go on (Interrupt).
	interrupted bool
}

// NewTracker reports to host, showing the items' output on live (nil:
// nowhere).
func NewTracker(host itemtask.Host, live *itemtask.Live) *Tracker {
	return &Tracker{host: host, live: live, runs: map[int]*Progress{}}
}

// Progress is what one dispatch learned from the runs of its task.
type Progress struct {
	task   itemtask.Task
	ctx    context.Context // ends with the dispatch
	cancel context.CancelFunc
	// abort tells the dispatch that the host refused a checkpoint: the
	// task stops without an outcome.
	abort chan error // buffered, one
	// run is the newest run of the task heard from; older ones are
	// refused.
	run RunID
	// sent counts the times the task was sent.
	sent int
	// emitted counts the events of each run recorded live: the result's
	// events after them are recorded with it. emitting counts those
	// counted whose recording is under way, which the result's waits
	// for: the dispatch must not end before they are recorded.
	emitted  map[RunID]int
	emitting sync.WaitGroup
	// checkpoints are the task's and those saved since, for a run that
	// starts after them.
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

// Aborted is where the dispatch hears that the host refused a checkpoint
// of its task: the task stops without an outcome.
func (p *Progress) Aborted() <-chan error { return p.abort }

// Interrupt stops, from now on, the runs that no dispatch waits for: a
// run whose delay ends while the interrupted job winds down would
// otherwise take up its next step without one of the job's slots and be
// stopped in it when it hears of the interrupt, so that the step runs
// again on resume (more than the max_parallel steps executing at the
// interrupt would).
func (tr *Tracker) Interrupt() {
	tr.mu.Lock()
	tr.interrupted = true
	tr.mu.Unlock()
}

// Track starts hearing the runs of t, until Untrack; emitted counts the
// events of each of its runs recorded so far (by an ended process).
func (tr *Tracker) Track(ctx context.Context, t itemtask.Task, emitted map[RunID]int) *Progress {
	p := &Progress{task: t, abort: make(chan error, 1), emitted: maps.Clone(emitted), checkpoints: t.Checkpoints}
	if p.emitted == nil {
		p.emitted = map[RunID]int{}
	}
	p.ctx, p.cancel = context.WithCancel(ctx)
	tr.mu.Lock()
	tr.runs[t.Index] = p
	tr.mu.Unlock()
	return p
}

// Untrack stops hearing the runs of p's task, once a slot being taken
// back for it is held (and then the engine's).
func (tr *Tracker) Untrack(p *Progress) {
	tr.mu.Lock()
	p.ended = true
	if tr.runs[p.task.Index] == p {
		delete(tr.runs, p.task.Index)
	}
	tr.mu.Unlock()
	p.cancel()
	p.slotWork.Wait()
}

// Sending is what a task of t sent now carries: the steps saved so far by
// the runs of its attempt, and the times it was sent before.
func (tr *Tracker) Sending(t itemtask.Task) (checkpoints []itemtask.StepRecord, sent int) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	p := tr.runs[t.Index]
	if p == nil || p.task.Attempt != t.Attempt {
		return t.Checkpoints, 0
	}
	p.sent++
	return p.checkpoints, p.sent - 1
}

// Unemitted are the events of run (of item index's attempt) that were
// not recorded live (by this process, or by an ended one: emitted, for a
// run this process did not hear), in order, and the place of the first
// among the run's events (from 1). It returns once the live events are
// recorded: an event of the run counted as recorded live may still be on
// its way to the host, which would refuse it once the dispatch is over.
func (tr *Tracker) Unemitted(index, attempt int, run RunID, events []eventlog.Event, emitted map[RunID]int) ([]eventlog.Event, int) {
	tr.mu.Lock()
	p := tr.runs[index]
	if p != nil && p.task.Attempt == attempt {
		emitted = p.emitted
	} else {
		p = nil
	}
	n := 0
	if emitted != nil {
		n = min(emitted[run], len(events))
		emitted[run] = len(events) // a late live event is not recorded twice
	}
	tr.mu.Unlock()
	if p != nil {
		p.emitting.Wait()
	}
	return events[n:], n + 1
}

// Receive handles one message of a run; answer answers a request (nil,
// or a function that does nothing, for a published message). An answer
// lost on the way leaves the run to go on, or ask again.
func (tr *Tracker) Receive(m Msg, answer func(Reply)) {
	if answer == nil {
		answer = func(Reply) {}
	}
	if m.Kind == KindOutput {
		tr.show(m)
		return
	}
	p, refusal := tr.find(m)
	if p == nil {
		answer(refusal)
		return
	}
	switch m.Kind {
	case KindStart:
		tr.acquire(slotRequest{answer: answer, start: true}, p)
	case KindEvent:
		tr.emit(p, m)
	case KindCheckpoint:
		tr.checkpoint(answer, p, m)
	case KindRelease:
		tr.release(p)
	case KindAcquire:
		tr.acquire(slotRequest{answer: answer}, p)
	default:
		answer(Reply{Error: fmt.Sprintf("unknown message %q", m.Kind)})
	}
}

// show shows lines of an item's output, as they come from any run: the
// lines of a run given up are shown as a local item's are.
func (tr *Tracker) show(m Msg) {
	if tr.live == nil {
		return
	}
	w := tr.live.Stdout
	if m.Stream == "stderr" {
		w = tr.live.Stderr
	}
	_, _ = io.WriteString(w, m.Text)
}

// find is the dispatch that waits for the run m tells of; nil with the
// answer to give when none does.
func (tr *Tracker) find(m Msg) (*Progress, Reply) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	p := tr.runs[m.Index]
	switch {
	case p == nil && tr.interrupted:
		return nil, Reply{Error: "the job was interrupted: resume goes on after its saved steps"}
	case p == nil || m.Attempt > p.task.Attempt:
		return nil, Reply{Unknown: true}
	case m.Attempt < p.task.Attempt || m.DispatchID != "" && m.DispatchID != p.task.DispatchID:
		return nil, Reply{Error: fmt.Sprintf("attempt %d of item %s is over: %v", m.Attempt, p.task.ItemID, itemtask.ErrStale), Term: true}
	case m.ID().Before(p.run):
		return nil, Reply{Error: fmt.Sprintf("item %s's task was delivered again since (delivery %d)", p.task.ItemID, p.run.Delivery)}
	}
	p.run = m.ID()
	return p, Reply{}
}

// emit records an event of p's task that comes next in its run's order;
// one after a gap (events lost on the way) waits for the result, which
// carries them all. A NATS worker's event is told of its worker and run.
func (tr *Tracker) emit(p *Progress, m Msg) {
	run := m.ID()
	tr.mu.Lock()
	next := m.Event != nil && m.Seq == p.emitted[run]+1
	if next {
		p.emitted[run] = m.Seq
		p.emitting.Add(1)
	}
	tr.mu.Unlock()
	if !next {
		return
	}
	defer p.emitting.Done()
	e := *m.Event
	if m.Worker != "" {
		e = e.WithWorker(m.Worker, m.Delivery).WithRun(run.String(), m.Seq)
	}
	_ = tr.host.Emit(p.task.DispatchID, e) // ErrStale: the item moved on
}

// checkpoint saves a step of p's task and answers: a step the host
// refuses stops the task, here and where it runs.
func (tr *Tracker) checkpoint(answer func(Reply), p *Progress, m Msg) {
	if m.Step == nil {
		answer(Reply{Error: "a checkpoint without a step"})
		return
	}
	if err := tr.host.Checkpoint(p.task.DispatchID, *m.Step); err != nil {
		select {
		case p.abort <- err:
		default:
		}
		answer(Reply{Error: err.Error(), Term: true})
		return
	}
	tr.mu.Lock()
	p.checkpoints = withStep(p.checkpoints, *m.Step)
	tr.mu.Unlock()
	answer(Reply{})
}

// withStep is steps with rec in place of the record of its step, if any.
func withStep(steps []itemtask.StepRecord, rec itemtask.StepRecord) []itemtask.StepRecord {
	same := func(s itemtask.StepRecord) bool { return s.Index == rec.Index }
	return append(slices.DeleteFunc(slices.Clone(steps), same), rec)
}

// release gives p's slot back while its step waits out a delay. One that
// is being taken back already stays held: the release is older than the
// acquire that a lost answer made the run ask again. It is done under
// tr.mu, as the dispatch's end is marked: the slot is the engine's once
// the dispatch is over.
func (tr *Tracker) release(p *Progress) {
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
	answer func(Reply)
	start  bool
}

// acquire takes p's slot back and then answers req. Asked again while it
// waits (the run's request timed out, or a new run starts), it answers
// the last request once it holds the slot. A start is answered at once
// with the checkpoints it goes on after, unless the task's slot is given
// back (the run before it was lost during a delay): it waits for the
// slot first, as that run would have.
func (tr *Tracker) acquire(req slotRequest, p *Progress) {
	tr.mu.Lock()
	if req.start && !p.released && !p.acquiring {
		checkpoints := p.checkpoints
		tr.mu.Unlock()
		req.answer(Reply{Checkpoints: checkpoints})
		return
	}
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
		var reply Reply
		switch {
		case err != nil:
			reply.Error = err.Error()
		case req.start:
			reply.Checkpoints = p.checkpoints
		}
		tr.mu.Unlock()
		req.answer(reply)
	}()
}
