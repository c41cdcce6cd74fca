package remote

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/runnerdev/runner/internal/eventlog"
	"github.com/runnerdev/runner/internal/itemtask"
)

// Reporter tells the job's side how one run goes, over a transport: it
// is the run's Slot (given back during a delay and asked for again), its
// checkpoints' saver and its events' sender. Events are numbered; those
// of the run's first hold-back go only once the hold is over (Flush), or
// never (Drop) when the run ended within it and its result carries them.
type Reporter struct {
	tr  Transport
	run Run

	mu      sync.Mutex // orders the events; guards the fields below
	events  int        // numbered so far
	held    []Msg      // the events of the hold, while it lasts
	holding bool
	dropped bool // the run's result carries its events: none goes
}

// NewReporter reports run over tr, holding its events back for holdBack
// (0: none).
func NewReporter(tr Transport, run Run, holdBack time.Duration) *Reporter {
	rp := &Reporter{tr: tr, run: run, holding: holdBack > 0}
	if rp.holding {
		time.AfterFunc(holdBack, rp.Flush)
	}
	return rp
}

// msg is a message of kind of the run.
func (rp *Reporter) msg(kind string) Msg { return Msg{Kind: kind, Run: rp.run} }

// request asks m; its error is a *Refusal, the transport's or ctx's. A
// request unheard (ErrUnheard) has no error and a Reply that says
// Unknown: the run goes on as it would without an answer.
func (rp *Reporter) request(ctx context.Context, m Msg) (Reply, error) {
	reply, err := rp.tr.Request(ctx, m)
	switch {
	case errors.Is(err, ErrUnheard):
		return Reply{Unknown: true}, nil
	case err == nil && !reply.Unknown && reply.Error != "":
		err = &Refusal{Reason: reply.Error, Term: reply.Term}
	}
	return reply, err
}

// Start asks the checkpoints the run goes on after: those the job saved
// since the task was sent, or saved (the task's) when it does not
// answer. A run that comes after one lost during a delay waits for the
// job's slot that one gave back. The first delivery of a task sent once
// does not ask: no run came before it, and the task carries what the job
// had saved.
func (rp *Reporter) Start(ctx context.Context, saved []itemtask.StepRecord) ([]itemtask.StepRecord, error) {
	if rp.run.Delivery <= 1 && rp.run.Sent == 0 {
		return saved, nil
	}
	reply, err := rp.request(ctx, rp.msg(KindStart))
	if reply.Unknown {
		return saved, nil
	}
	return reply.Checkpoints, err
}

// Save saves a step with the job before the next one starts. When no
// answer comes the run goes on: the job's process is gone, and a process
// resuming the job takes its result.
func (rp *Reporter) Save(ctx context.Context, rec itemtask.StepRecord) error {
	rp.Flush() // the step's events before it
	m := rp.msg(KindCheckpoint)
	m.Step = &rec
	_, err := rp.request(ctx, m)
	return err
}

// Emit sends an event of the run, the next of its events, once the
// run's hold is over.
func (rp *Reporter) Emit(e eventlog.Event) {
	rp.mu.Lock()
	defer rp.mu.Unlock()
	rp.events++
	m := rp.msg(KindEvent)
	m.Seq, m.Event = rp.events, &e
	switch {
	case rp.dropped:
	case rp.holding:
		rp.held = append(rp.held, m)
	default:
		rp.tr.Publish(m)
	}
}

// Release gives the job's slot back while a step waits out a delay.
func (rp *Reporter) Release() {
	rp.Flush() // the events before the delay
	rp.tr.Publish(rp.msg(KindRelease))
}

// Acquire takes the job's slot back, going on when no one answers.
func (rp *Reporter) Acquire(ctx context.Context) error {
	_, err := rp.request(ctx, rp.msg(KindAcquire))
	return err
}

// Flush ends the run's hold: its events kept back go now, in order (no
// result will carry them).
func (rp *Reporter) Flush() {
	rp.mu.Lock()
	defer rp.mu.Unlock()
	rp.holding = false
	for _, m := range rp.held {
		rp.tr.Publish(m)
	}
	rp.held = nil
}

// Drop forgets the events kept back and any sent after: the run's result
// carries them.
func (rp *Reporter) Drop() {
	rp.mu.Lock()
	defer rp.mu.Unlock()
	rp.dropped, rp.held = true, nil
}

// Output is where items write their output for the job's side to show:
// output messages of whole lines over tr, masked with mask (nil: as they
// are). It never fails: a message lost leaves the lines in the item's log
// only.
func Output(tr Transport, mask func(string) string) *itemtask.Live {
	return &itemtask.Live{Stdout: outputSender{tr, "stdout", mask}, Stderr: outputSender{tr, "stderr", mask}}
}

type outputSender struct {
	tr     Transport
	stream string
	mask   func(string) string
}

func (o outputSender) Write(p []byte) (int, error) {
	text := string(p)
	if o.mask != nil {
		text = o.mask(text)
	}
	o.tr.Publish(Msg{Kind: KindOutput, Stream: o.stream, Text: text})
	return len(p), nil
}
