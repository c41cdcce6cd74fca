package natscoord

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/nats-io/nats.go"

	"github.com/runnerdev/runner/internal/itemtask"
	"github.com/runnerdev/runner/internal/natsconn"
)

// outgoing is a task waiting for the sender, with the record of its item.
type outgoing struct {
	r    *record
	body []byte          // the task, in JSON
	ctx  context.Context // its dispatch's: a task whose dispatch ended stays here
	sent chan error      // buffered: the sender's publishing's error, nil once stored
}

// sender publishes the tasks handed to it, one message at a time, on its
// own goroutine: the tasks handed over while one message is published go
// together in the next (a group commit), up to Options.Batch of them: one
// message, one delivery and one acknowledgement for them all. A worker
// runs a batch's items at once, each on a slot of its own, so a batch
// larger than its free slots waits for them, while another worker may be
// idle: batches are asked for (--nats-batch), for many short items.
type sender struct {
	d     *Dispatcher
	mu    sync.Mutex
	queue []*outgoing
	wake  chan struct{} // one buffered: the queue has tasks
	n     atomic.Uint64 // the messages sent so far
}

func newSender(d *Dispatcher) *sender { return &sender{d: d, wake: make(chan struct{}, 1)} }

// send publishes t's task in a batch and waits until the server stored
// it, or ctx ends; the batch's subject becomes r's. It reports false,
// with the outcome of the attempt, when the task cannot be sent (too
// large for NATS).
func (d *Dispatcher) send(ctx context.Context, r *record, t itemtask.Task) (itemtask.Outcome, bool) {
	checkpoints, sent := d.prog.Sending(t)
	body, err := taskBody(natsconn.Task{JobID: t.JobID, Index: t.Index, ItemID: t.ItemID, Attempt: t.Attempt, Epoch: d.epoch, Item: t.Item, MaxDeliveries: d.maxDel, Total: t.Total, Tip: t.Tip, Checkpoints: checkpoints, Sent: sent})
	if err == nil && len(body)+natsconn.BatchOverhead > natsconn.MaxTask {
		err = fmt.Errorf("item too large for NATS max_payload: its task is %d bytes, over %d", len(body), natsconn.MaxTask)
	}
	if err != nil {
		return t.FailedWith("spawn", err), false
	}
	o := &outgoing{r: r, body: body, ctx: ctx}
	if d.batch == 1 {
		// Each task its own message: published by its dispatch, as many
		// at once as there are dispatches (through one sender they would
		// go one at a time, each waiting for the one before).
		err = d.out.publish(ctx, []*outgoing{o})
	} else {
		o.sent = make(chan error, 1)
		d.out.add(o)
		select {
		case err = <-o.sent:
		case <-ctx.Done():
		}
	}
	if err == nil || ctx.Err() != nil {
		return itemtask.Outcome{}, true // interrupted: the wait says so
	}
	return t.FailedWith("spawn", err), false
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

func (s *sender) add(o *outgoing) {
	s.mu.Lock()
	s.queue = append(s.queue, o)
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// run publishes the tasks handed over until ctx ends.
func (s *sender) run(ctx context.Context) {
	for {
		select {
		case <-s.wake:
			for s.next(ctx) {
			}
		case <-ctx.Done():
			s.mu.Lock()
			for _, o := range s.queue {
				o.sent <- context.Cause(ctx)
			}
			s.queue = nil
			s.mu.Unlock()
			return
		}
	}
}

// next publishes the tasks at the head of the queue, as many as fit one
// message up to the dispatcher's batch (those whose dispatch ended are
// dropped); it reports false when the queue was empty.
func (s *sender) next(ctx context.Context) bool {
	s.mu.Lock()
	var batch []*outgoing
	size := 0
	for len(s.queue) > 0 && len(batch) < s.d.batch {
		o := s.queue[0]
		if o.ctx.Err() != nil {
			o.sent <- context.Cause(o.ctx)
			s.queue = s.queue[1:]
			continue
		}
		if len(batch) > 0 && size+len(o.body)+natsconn.BatchOverhead > natsconn.MaxTask {
			break
		}
		size += len(o.body) + natsconn.BatchOverhead
		batch = append(batch, o)
		s.queue = s.queue[1:]
	}
	s.mu.Unlock()
	if len(batch) == 0 {
		return false
	}
	err := s.publish(ctx, batch)
	for _, o := range batch {
		o.sent <- err
	}
	return true
}

// publish publishes the tasks of batch in one message, under a subject
// and message id of its own, which becomes their records' subject, until
// the server stored it or ctx ends.
func (s *sender) publish(ctx context.Context, batch []*outgoing) error {
	name := natsconn.BatchName(s.d.epoch, s.n.Add(1))
	subject := natsconn.TaskSubject(s.d.queue, s.d.key, name)
	bodies := make([][]byte, len(batch))
	s.d.mu.Lock()
	for i, o := range batch {
		bodies[i] = o.body
		o.r.subject = subject
	}
	s.d.mu.Unlock()
	return natsconn.Publish(ctx, s.d.js, natsconn.NewMsg(subject, s.d.j.ID(), natsconn.BatchBody(bodies)), natsconn.TaskMsgID(s.d.key, name))
}

// answerAwaited answers a worker's question about the items of a batch
// delivered again (natsconn.Awaited): which of them a dispatch still
// waits for. The others are recorded, or their dispatch ended: they are
// not run again.
func (d *Dispatcher) answerAwaited(msg *nats.Msg) {
	var q natsconn.Awaited
	if json.Unmarshal(msg.Data, &q) != nil {
		return
	}
	d.mu.Lock()
	a := awaited(d.items, q, d.epoch)
	d.mu.Unlock()
	if data, err := json.Marshal(a); err == nil {
		_ = msg.Respond(data)
	}
}

// awaited is the answer to q of a dispatcher in epoch whose records are
// items: an item is awaited while its record waits for the result of the
// attempt and epoch asked about (record.waitsFor); one with no record
// (recorded, or its dispatch ended) or whose result is here is not.
func awaited(items map[int]*record, q natsconn.Awaited, epoch int) natsconn.Awaited {
	a := natsconn.Awaited{Awaited: make([]bool, len(q.Items))}
	for i, it := range q.Items {
		r := items[it.Index]
		a.Awaited[i] = r != nil && r.waitsFor(it.Attempt, it.Epoch, epoch)
	}
	return a
}
