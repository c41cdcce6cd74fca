package natsworker

import (
	"context"
	"sync"
	"time"
)

// heartbeat is how often a running task tells the server it is in
// progress.
func (w *Worker) heartbeat() time.Duration { return w.ackWait / 6 }

// beat sends "+WPI" to the server for the batch's message every
// heartbeat while its runs go on (heartbeats), each answer renewing their
// lease, logged with LogBeats (in RFC 3339 times to the nanosecond: the
// server's ack_wait clock restarted between the two) and announced to the
// job's coordinator; once the lease has ended it stops the runs. The
// returned function ends the heartbeats.
func (b *batch) beat() func() {
	w, item := b.w, b.name()
	ask := func(ctx context.Context) error {
		_, err := w.opts.Conn.RequestWithContext(ctx, b.msg.Reply(), []byte("+WPI"))
		return err
	}
	return heartbeats(b.ctx, w.heartbeat(), b.ls, ask, func(sent, answered time.Time) {
		if w.opts.LogBeats {
			w.logf("job %s: heartbeat sent %s answered %s", item, sent.Format(time.RFC3339Nano), answered.Format(time.RFC3339Nano))
		}
		b.announce()
	}, b.cut)
}

// heartbeats calls ask every `every` until ctx ends or the returned
// function is called, each call on its own and waiting for its answer as
// long as that answer could renew the lease (the lease's limit from its
// sending): a heartbeat does not wait for the one before it, so a server
// that answers later than a heartbeat (a loaded machine) still keeps the
// lease, as each heartbeat it received restarted its ack_wait clock. Each
// answer that renews ls is passed to answered; once ls has ended, stop
// stops the runs with errCutOff and the heartbeats end.
func heartbeats(ctx context.Context, every time.Duration, ls *lease, ask func(context.Context) error, answered func(sent, answered time.Time), stop context.CancelCauseFunc) (end func()) {
	ctx, cancel := context.WithCancel(ctx)
	var asks sync.WaitGroup
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			sent := time.Now()
			if ls.expired(sent) {
				stop(errCutOff)
				return
			}
			asks.Go(func() {
				actx, cancel := context.WithDeadline(ctx, sent.Add(ls.limit))
				defer cancel()
				if ask(actx) != nil {
					return
				}
				if at := time.Now(); ls.renew(sent, at) {
					answered(sent, at)
				}
			})
		}
	}()
	return func() {
		cancel()
		<-ended
		asks.Wait()
	}
}
