package natsworker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/runnerdev/runner/internal/eventlog"
	"github.com/runnerdev/runner/internal/itemtask"
	"github.com/runnerdev/runner/internal/natsconn"
)

// Bounds of a run's waits on its coordinator's answers, which keep a
// coordinator that is gone or unreachable from holding the run: a
// checkpoint without an answer goes on; a start or a slot, which may wait
// for one of the job's slots, is asked for again.
const (
	answerWithin = natsconn.CallDeadline
	slotWithin   = 30 * time.Second
)

// reporter tells the coordinator of a task's job how one delivery of the
// task runs (natsconn.Progress on runner.progress.J).
type reporter struct {
	conn    *nats.Conn
	subject string
	base    natsconn.Progress // the run: index, attempt, delivery, worker
	events  int               // sent so far; guarded by Worker.mu
	held    *heldSends        // the run's events in its first holdBack
}

// refusal is the coordinator's answer that a run must stop; term says its
// task is to be dropped, not delivered again.
type refusal struct {
	reason string
	term   bool
}

func (r *refusal) Error() string { return "the coordinator stopped the run: " + r.reason }

// errUnheard is a request that got no answer that counts: no
// coordinator listens (nats.ErrNoResponders), it did not answer in time,
// or it does not know the run (natsconn.ProgressReply.Unknown).
var errUnheard = errors.New("no answer from the coordinator")

// errSilent is errUnheard of a request that waited its bound out: the
// coordinator may still answer it, or be slow.
var errSilent = fmt.Errorf("%w in time", errUnheard)

// request asks the coordinator and waits at most within. Its error is a
// *refusal, ctx's cause, or errUnheard.
func (rp *reporter) request(ctx context.Context, p natsconn.Progress, within time.Duration) (natsconn.ProgressReply, error) {
	var reply natsconn.ProgressReply
	data, err := json.Marshal(p)
	if err != nil {
		return reply, err
	}
	rctx, cancel := context.WithTimeout(ctx, within)
	defer cancel()
	msg, err := rp.conn.RequestWithContext(rctx, rp.subject, data)
	switch {
	case ctx.Err() != nil:
		return reply, context.Cause(ctx)
	case rctx.Err() != nil:
		return reply, errSilent
	case err != nil:
		return reply, fmt.Errorf("%w: %w", errUnheard, err)
	case json.Unmarshal(msg.Data, &reply) != nil || reply.Unknown:
		return reply, errUnheard
	case reply.Error != "":
		return reply, &refusal{reason: reply.Error, term: reply.Term}
	}
	return reply, nil
}

// await asks p until the coordinator answers it, or no coordinator
// listens or knows the run (errUnheard): p may wait for one of the job's
// slots, and a request that timed out is answered when the slot is held.
func (rp *reporter) await(ctx context.Context, p natsconn.Progress) (natsconn.ProgressReply, error) {
	for {
		reply, err := rp.request(ctx, p, slotWithin)
		if !errors.Is(err, errSilent) {
			return reply, err
		}
	}
}

// publish tells the coordinator p, without waiting: one lost only delays
// what the coordinator learns (the result carries the run's events).
func (rp *reporter) publish(p natsconn.Progress) {
	if data, err := json.Marshal(p); err == nil {
		_ = rp.conn.Publish(rp.subject, data)
	}
}

// start asks the checkpoints the run goes on after: those its coordinator
// saved since the task was sent, or saved (the task's) when it does not
// answer. A run that comes after one lost during a delay waits for the
// job's slot that one gave back. The first delivery of a task sent once
// does not ask: no run came before it, and the task carries what its
// coordinator had saved.
func (rp *reporter) start(ctx context.Context, saved []itemtask.StepRecord) ([]itemtask.StepRecord, error) {
	p := rp.base
	if p.Delivery == 1 && p.Sent == 0 {
		return saved, nil
	}
	p.Kind = natsconn.ProgressStart
	reply, err := rp.await(ctx, p)
	if errors.Is(err, errUnheard) {
		return saved, nil
	}
	return reply.Checkpoints, err
}

// save saves a step with the coordinator before the next one starts. When
// no answer comes the run goes on: its coordinator is gone, and a process
// resuming the job takes its result.
func (rp *reporter) save(ctx context.Context, rec itemtask.StepRecord) error {
	rp.held.release() // the step's events before it
	p := rp.base
	p.Kind, p.Step = natsconn.ProgressCheckpoint, &rec
	if _, err := rp.request(ctx, p, answerWithin); !errors.Is(err, errUnheard) {
		return err
	}
	return nil
}

// event sends an event of the run, the next of its delivery, once the
// run's hold is over; it is called with Worker.mu held, which orders them.
func (rp *reporter) event(e eventlog.Event) {
	rp.events++
	p := rp.base
	p.Kind, p.Seq, p.Event = natsconn.ProgressEvent, rp.events, &e
	rp.held.send(func() { rp.publish(p) })
}

// runSlot is a run's hold on its places: the worker's own (one of
// --concurrency) and the job's (one of max_parallel, held by the
// coordinator). Both are given back while a step waits out a delay, and
// taken again, the job's first, before it goes on. It is used by the
// run's goroutine only.
type runSlot struct {
	rp       *reporter
	own      *itemtask.Hold
	waiting  *atomic.Int64 // the worker's runs whose own slot is given back
	released bool
}

func (s *runSlot) Release() {
	if s.released {
		return
	}
	s.released = true
	s.waiting.Add(1)
	s.own.Release()
	s.rp.held.release() // the events before the delay
	p := s.rp.base
	p.Kind = natsconn.ProgressRelease
	s.rp.publish(p)
}

// Acquire takes the job's slot back, asking again while the coordinator
// holds the request, and going on when no coordinator listens or knows
// the run; then the worker's own.
func (s *runSlot) Acquire(ctx context.Context) error {
	if !s.released {
		return nil
	}
	p := s.rp.base
	p.Kind = natsconn.ProgressAcquire
	if _, err := s.rp.await(ctx, p); err != nil && !errors.Is(err, errUnheard) {
		return err
	}
	if err := s.own.Acquire(ctx); err != nil {
		return err
	}
	s.released = false
	s.waiting.Add(-1)
	return nil
}

// end ends the hold of a run that stopped while its slot was given back.
func (s *runSlot) end() {
	if s.released {
		s.released = false
		s.waiting.Add(-1)
	}
}

// liveOutput is where the items of a job whose coordinator shows their
// output (natsconn.Spec.Live) write it: output messages of whole lines,
// masked as their logs are.
func liveOutput(conn *nats.Conn, subject string, mask func(string) string) *itemtask.Live {
	return &itemtask.Live{
		Stdout: outputSender{conn: conn, subject: subject, stream: "stdout", mask: mask},
		Stderr: outputSender{conn: conn, subject: subject, stream: "stderr", mask: mask},
	}
}

// outputSender publishes what it is given (whole lines, each prefixed with
// its item's id) as output messages. It never fails: one lost leaves the
// lines in the item's log only.
type outputSender struct {
	conn            *nats.Conn
	subject, stream string
	mask            func(string) string
}

func (o outputSender) Write(p []byte) (int, error) {
	data, err := json.Marshal(natsconn.Progress{Kind: natsconn.ProgressOutput, Stream: o.stream, Text: o.mask(string(p))})
	if err == nil {
		_ = o.conn.Publish(o.subject, data)
	}
	return len(p), nil
}
