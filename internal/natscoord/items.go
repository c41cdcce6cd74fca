package natscoord

import (
	"cmp"
	"context"
	"encoding/json"
	"strconv"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/runnerdev/runner/internal/eventlog"
	"github.com/runnerdev/runner/internal/itemtask"
	"github.com/runnerdev/runner/internal/itemtask/remote"
	"github.com/runnerdev/runner/internal/natsconn"
)

// phase is where an item's attempt stands as the dispatcher knows it
// (ARCHITECTURE.md, "The NATS coordinator's items", draws the moves).
type phase uint8

const (
	// left: an ended process left the item running; what the server holds
	// of it is not known yet (check reads it, at open).
	left phase = iota
	// sending: this process publishes the item's task.
	sending
	// published: the item's task is in the tasks stream, this process's
	// or an ended one's (adopted); the worker the beats name runs it.
	published
	// resulted: its result is here, delivered or read from the results
	// stream, for its dispatch to take.
	resulted
	// recording: its outcome is the engine's; its result is acknowledged
	// once the engine recorded it (Recorded), and the record leaves the
	// table.
	recording
	// gone: the record leaves the table (a move of reconcile's).
	gone
)

// record is one item's attempt in the dispatcher's table, Dispatcher.items:
// the one place that says where it stands. It is keyed by the item, and
// names the task message it went out in (subject), so that a message may
// carry several items.
type record struct {
	key            uint64 // its number in this process: a move finds it unchanged by it
	index, attempt int
	id             string
	phase          phase
	// ended says that what is out of the attempt is an ended process's:
	// its task (adopted) or its result, whose epoch is any.
	ended   bool
	task    itemtask.Task // this process's dispatch of it; zero before
	subject string        // the task message it went out in (its batch's); "" before
	holder  holder
	in      inbound       // its result, from resulted on
	ready   chan struct{} // closed when it is resulted
	// emitted counts the events of each run of its attempt that an ended
	// process recorded (recordedRuns): they are not recorded again.
	emitted map[remote.RunID]int
}

// inbound is a result with its message to acknowledge (nil for one read
// from the stream: its delivery, when it comes, is acknowledged instead),
// its place in the stream and, read from the stream, when it was stored.
type inbound struct {
	r   natsconn.Result
	msg jetstream.Msg
	seq uint64
	at  time.Time
}

// newRecord puts a record of the attempt of item index in the table, in
// place of any before; d.mu is held.
func (d *Dispatcher) newRecord(index, attempt int, id string, p phase) *record {
	d.keys++
	r := &record{key: d.keys, index: index, attempt: attempt, id: id, phase: p, ended: p == left, ready: make(chan struct{})}
	d.items[index] = r
	return r
}

// waitsFor reports whether r waits for the result of attempt sent in
// sentIn, the epoch of its task, by a dispatcher in epoch: of its attempt
// and, unless an ended process sent what is out of it, of this process's
// epoch (a dlq retry numbers a retried item's attempts from 1 again, and
// a result the first run never acknowledged comes back to it).
func (r *record) waitsFor(attempt, sentIn, epoch int) bool {
	return r.phase <= published && r.attempt == attempt && (r.ended || sentIn == epoch)
}

// move is r's move to phase to, as reconcile asks for it.
func (r record) move(to phase) move {
	return move{index: r.index, key: r.key, from: r.phase, to: to}
}

// begin puts t's attempt in the table: it takes up what an ended process
// left of it (its task adopted, or its result), else a new record is
// sent. It returns the record and its phase.
func (d *Dispatcher) begin(t itemtask.Task) (*record, phase) {
	d.mu.Lock()
	defer d.mu.Unlock()
	r := d.items[t.Index]
	if !r.endedOut(t.Attempt) {
		r = d.newRecord(t.Index, t.Attempt, t.ItemID, sending)
	}
	r.task, r.id = t, t.ItemID
	return r, r.phase
}

// end takes r out of the table when its dispatch ends without an outcome:
// what comes for it later is a duplicate.
func (d *Dispatcher) end(r *record) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.items[r.index] == r && r.phase != recording {
		delete(d.items, r.index)
	}
}

// fromEndedProcess reports whether the attempt's result or task is one an
// ended process left.
func (d *Dispatcher) fromEndedProcess(index, attempt int) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.items[index].endedOut(attempt)
}

// endedOut reports whether r (nil: none) is attempt's task or result that
// an ended process left.
func (r *record) endedOut(attempt int) bool {
	return r != nil && r.ended && r.attempt == attempt && (r.phase == published || r.phase == resulted)
}

// take gives in to r, whose result it is; d.mu is held, and unlocked.
// A redelivery no beat told of is learnt from it: the worker ran none
// (max_deliveries), or is older.
func (d *Dispatcher) take(r *record, in inbound) {
	was := r.phase
	r.phase, r.in = resulted, in
	close(r.ready)
	if was == left {
		d.mu.Unlock()
		return
	}
	d.learn(r, in.r.Worker, in.r.Delivery, 0, time.Time{})
}

// receive gives a result to the record waiting for it, or drops it as a
// duplicate.
func (d *Dispatcher) receive(msg jetstream.Msg) {
	var res natsconn.Result
	if err := json.Unmarshal(msg.Data(), &res); err != nil || msg.Headers().Get(natsconn.HeaderProto) != natsconn.Proto {
		d.acks.add(msg) // not a result this runner can read: nothing waits for it
		return
	}
	in := inbound{r: res, msg: msg, seq: streamSeq(msg)}
	d.mu.Lock()
	r := d.items[res.Index]
	switch {
	case r != nil && r.waitsFor(res.Attempt, res.Epoch, d.epoch):
		d.take(r, in)
		return
	case r != nil && (r.phase == resulted || r.phase == recording) && r.in.seq == in.seq:
		// The delivery of a result read from the stream, or one the
		// consumer sent again (its ack_wait ran out): it is the one to
		// acknowledge.
		r.in.msg = msg
		d.mu.Unlock()
		return
	}
	id := cmp.Or(res.ItemID, "#"+strconv.Itoa(res.Index))
	if r != nil {
		id = r.id
	}
	d.mu.Unlock()
	d.acks.add(msg)
	d.host.JobEvent(eventlog.ResultDuplicate(id, res.Attempt, res.Epoch, res.Worker, res.Delivery))
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

// Dispatch publishes t's task, unless an ended process's is still out, and
// waits for its result (itemtask.Dispatcher).
func (d *Dispatcher) Dispatch(ctx context.Context, t itemtask.Task) (itemtask.Outcome, error) {
	if out, ok := d.withTip(ctx, &t); !ok {
		return out, nil
	}
	r, p := d.begin(t)
	defer d.end(r)
	if p == resulted {
		return d.outcome(ctx, r, t)
	}
	prog := d.prog.Track(ctx, t, r.emitted)
	defer d.prog.Untrack(prog)
	if p == sending {
		if out, sent := d.send(ctx, r, t); !sent {
			return out, nil
		}
		d.mu.Lock()
		if r.phase == sending && ctx.Err() == nil {
			r.phase = published
		}
		d.mu.Unlock()
	}
	select {
	case <-r.ready:
		return d.outcome(ctx, r, t)
	case err := <-prog.Aborted():
		return itemtask.Outcome{}, err
	case <-ctx.Done():
		return itemtask.Outcome{}, d.interrupt(ctx)
	}
}

// interrupt marks the job interrupted, as a dispatch's ctx ended (Close
// tells the workers), and returns ctx's cause.
func (d *Dispatcher) interrupt(ctx context.Context) error {
	d.interrupted.Store(true)
	d.prog.Interrupt()
	return context.Cause(ctx)
}

// Recorded has the result of dispatch id, which the engine has recorded,
// acknowledged (itemtask.Dispatcher), without waiting for it: the
// acknowledgement goes out even when ctx ended meanwhile (an interrupt),
// as the record is made and the result would otherwise come back, and
// Close waits until the server confirmed it.
func (d *Dispatcher) Recorded(_ context.Context, id string) {
	d.mu.Lock()
	var msg jetstream.Msg
	for index, r := range d.items {
		if r.phase == recording && r.task.DispatchID == id {
			msg = r.in.msg
			delete(d.items, index)
			break
		}
	}
	d.mu.Unlock()
	if msg != nil {
		d.acks.add(msg)
	}
}

// snapshot is a copy of the records check looks at: left and published.
func (d *Dispatcher) snapshot() []record {
	d.mu.Lock()
	defer d.mu.Unlock()
	var recs []record
	for _, r := range d.items {
		if r.phase == left || r.phase == published {
			recs = append(recs, *r)
		}
	}
	return recs
}
