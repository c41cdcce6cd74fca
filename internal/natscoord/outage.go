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
		d.outage.Store(&o)
		d.host.JobEvent(eventlog.NATSUnavailable(o.Stream, o.Err.Error()))
	}, func(o natsconn.Outage) {
		d.outage.Store(nil)
		d.host.JobEvent(eventlog.NATSRestored(o.Stream, time.Since(o.Since)))
	})
}

// Outage is the open dispatcher's outage now: since when which of its
// NATS streams does not answer; the zero Outage when they all do.
func (w *Watch) Outage() natsconn.Outage {
	if d := w.d.Load(); d != nil && d.outage.Load() != nil {
		return *d.outage.Load()
	}
	return natsconn.Outage{}
}
