package natscoord

import (
	"context"
	"encoding/json"
	"slices"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/runnerdev/runner/internal/eventlog"
	"github.com/runnerdev/runner/internal/natsconn"
)

// Stranded are a job's tasks whose worker stopped answering: no beat came
// for 2.5 heartbeats, so the worker died, froze or lost the server, and
// the server delivers each task again ack_wait after its last heartbeat.
type Stranded struct {
	Tasks   int
	Workers []string      // the workers that had them, sorted
	AckWait time.Duration // the queue's, as the workers tell it
	Until   time.Time     // when the last of them is due again
}

// Watch lets the status line see the stranded tasks and the outage of a
// job's dispatcher while it is open; its zero value is ready, and sees
// none.
type Watch struct{ d atomic.Pointer[Dispatcher] }

func (w *Watch) set(d *Dispatcher) {
	if w != nil {
		w.d.Store(d)
	}
}

// Stranded are the open dispatcher's stranded tasks now.
func (w *Watch) Stranded() Stranded {
	if d := w.d.Load(); d != nil {
		return d.stranded(time.Now())
	}
	return Stranded{}
}

// Outage is the open dispatcher's outage now: since when which of its
// NATS streams does not answer; the zero Outage when they all do.
func (w *Watch) Outage() natsconn.Outage {
	if d := w.d.Load(); d != nil {
		if o := d.outage.Load(); o != nil { // one load: the watch may clear it meanwhile
			return *o
		}
	}
	return natsconn.Outage{}
}

// watchStreams says when the job's NATS streams stop answering and when
// they answer again, in an event (which runner run shows) and on the
// status line (Watch.Outage). Meanwhile the job waits for them, as long
// as it takes: its tasks and results are kept by the server, and
// publishes and pulls go on trying; an interrupt stops it, resumable.
func (d *Dispatcher) watchStreams(ctx context.Context, every time.Duration) {
	d.objs.WatchStreams(ctx, every, func(o natsconn.Outage) {
		d.outage.Store(&o)
		d.host.JobEvent(eventlog.NATSUnavailable(o.Stream, o.Err.Error()))
	}, func(o natsconn.Outage) {
		d.outage.Store(nil)
		d.host.JobEvent(eventlog.NATSRestored(o.Stream, time.Since(o.Since)))
	})
}

// holder is what the dispatcher knows of the worker that has an item's
// task: from its beats and its result. Guarded by Dispatcher.mu.
type holder struct {
	worker   string
	delivery int
	ackWait  time.Duration
	beatAt   time.Time // the last beat; zero: none came
}

// learn records that worker has the task in its delivery-th delivery (at
// the time of a beat; zero for a result). It reports whether that is a
// delivery after the first not known before, and the worker that had the
// task before ("": none known).
func (h *holder) learn(worker string, delivery int, ackWait time.Duration, at time.Time) (again bool, from string) {
	if delivery < h.delivery {
		return false, "" // a beat of an earlier delivery, come late
	}
	again, from = delivery > max(h.delivery, 1), h.worker
	if from == worker && again {
		from = "" // it gave the task back (nak) and got it again
	}
	h.worker, h.delivery = worker, delivery
	if !at.IsZero() {
		h.beatAt, h.ackWait = at, ackWait
	}
	return again, from
}

// silent reports whether the holder's worker stopped beating by now: no
// beat for 2.5 heartbeats (ack_wait/6 each).
func (h *holder) silent(now time.Time) bool {
	return !h.beatAt.IsZero() && now.Sub(h.beatAt) > h.ackWait*5/12
}

// onBeat records a worker's beat in its item's record, and the
// redelivery it shows.
func (d *Dispatcher) onBeat(msg *nats.Msg) {
	var b natsconn.Beat
	if json.Unmarshal(msg.Data, &b) != nil {
		return
	}
	d.mu.Lock()
	r, ok := d.items[b.Index]
	if !ok || r.attempt != b.Attempt || r.phase > published {
		d.mu.Unlock()
		return
	}
	d.learn(r, b.Worker, b.Delivery, time.Duration(b.AckWaitMS)*time.Millisecond, time.Now())
}

// learn records in r's holder that worker has its task in delivery (see
// holder.learn), with the event of a redelivery that shows; d.mu is held,
// and unlocked.
func (d *Dispatcher) learn(r *record, worker string, delivery int, ackWait time.Duration, at time.Time) {
	again, from := r.holder.learn(worker, delivery, ackWait, at)
	id, attempt := r.id, r.attempt
	d.mu.Unlock()
	if again {
		d.host.JobEvent(eventlog.TaskRedelivered(id, attempt, delivery, worker, from))
	}
}

// stranded are the items out whose worker is silent at now.
func (d *Dispatcher) stranded(now time.Time) Stranded {
	d.mu.Lock()
	defer d.mu.Unlock()
	var s Stranded
	for _, r := range d.items {
		h := &r.holder
		if r.phase > published || !h.silent(now) {
			continue
		}
		s.Tasks++
		if !slices.Contains(s.Workers, h.worker) {
			s.Workers = append(s.Workers, h.worker)
		}
		s.AckWait = max(s.AckWait, h.ackWait)
		if due := h.beatAt.Add(h.ackWait); due.After(s.Until) {
			s.Until = due
		}
	}
	slices.Sort(s.Workers)
	return s
}
