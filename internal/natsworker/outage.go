package natsworker

import (
	"cmp"
	"context"
	"time"

	"github.com/runnerdev/runner/internal/natsconn"
)

// watchStreams logs when the NATS streams stop answering and when they
// answer again. The worker waits for them meanwhile: its pulls, heartbeats
// and result publishes go on trying (a run whose heartbeats the server
// does not answer is stopped by its lease, and its task runs again).
func (w *Worker) watchStreams(ctx context.Context) {
	w.objs.WatchStreams(ctx, cmp.Or(w.opts.ProbeEvery, natsconn.ProbeEvery), func(o natsconn.Outage) {
		w.logf("%s: waiting for it", o)
	}, func(o natsconn.Outage) {
		w.logf("the NATS streams answer again, after %s", time.Since(o.Since).Round(time.Millisecond))
	})
}

// Replication is how the NATS streams and bucket the worker opened are
// replicated, in words ("R3"; see natsconn.Objects.Replication).
func (w *Worker) Replication() string {
	_, text := w.objs.Replication()
	return text
}
