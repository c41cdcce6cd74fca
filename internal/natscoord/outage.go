package natscoord

import (
	"context"
	"time"

	"github.com/runnerdev/runner/internal/eventlog"
	"github.com/runnerdev/runner/internal/natsconn"
)

// watchStreams says when the job's NATS streams stop answering and when
// they answer again, in an event (which runner run shows) and on the
// status line (Watch.Outage). Meanwhile the job waits for them, as long as it takes:
// its tasks and results are kept by the server, and publishes and pulls
// go on trying; an interrupt stops it, resumable.
func (d *Dispatcher) watchStreams(ctx context.Context, every time.Duration) {
	defer close(d.watched)
	d.objs.WatchStreams(ctx, every, func(o natsconn.Outage) {
		d.setOutage(o)
		d.host.JobEvent(eventlog.NATSUnavailable(o.Stream, o.Err.Error()))
	}, func(o natsconn.Outage) {
		d.setOutage(natsconn.Outage{})
		d.host.JobEvent(eventlog.NATSRestored(o.Stream, time.Since(o.Since)))
	})
}

func (d *Dispatcher) setOutage(o natsconn.Outage) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.outage = o
}

// Outage is the open dispatcher's outage now: since when which of its
// NATS streams does not answer; the zero Outage when they all do.
func (w *Watch) Outage() natsconn.Outage {
	d := w.d.Load()
	if d == nil {
		return natsconn.Outage{}
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.outage
}
