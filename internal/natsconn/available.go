package natsconn

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// ProbeEvery is how often a live coordinator or worker asks the server
// whether runner's streams answer (see WatchStreams).
const ProbeEvery = 5 * time.Second

// Outage is a time runner's streams did not answer: the first of them,
// in WatchStreams' fixed order, that did not, why, and since when.
type Outage struct {
	Stream string
	Err    error
	Since  time.Time
}

// Down reports whether o is an outage (the zero Outage is none).
func (o Outage) Down() bool { return o.Stream != "" }

// String says what is down: "NATS stream RUNNER_TASKS unavailable (...)".
func (o Outage) String() string {
	return fmt.Sprintf("NATS stream %s unavailable (%v)", o.Stream, o.Err)
}

// WatchStreams asks the server every every whether the tasks and results
// streams and the jobs bucket answer, in that order, until ctx ends: when
// one stops answering (its server down, its cluster without a leader for
// it, or the server without it), down is called once with the outage,
// which names the first of them that does not answer (RUNNER_TASKS when
// the server is down); when they all answer again, up is called with it.
// Nothing is called while they answer.
// Nothing is retried or given up here: the callers go on waiting for the
// server as they do, and say so.
func (o *Objects) WatchStreams(ctx context.Context, every time.Duration, down, up func(Outage)) {
	var out Outage
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		asked := time.Now() // a probe of a server that does not answer takes up to CallDeadline
		stream, err := o.probe(ctx)
		switch {
		case ctx.Err() != nil:
			return
		case err != nil && !out.Down():
			out = Outage{Stream: stream, Err: err, Since: asked}
			down(out)
		case err == nil && out.Down():
			up(out)
			out = Outage{}
		}
	}
}

// probed are the streams WatchStreams asks for, in the order an outage
// is named by: the first of them that does not answer.
var probed = []string{TasksStream, ResultsStream, jobsStream}

// probe asks for the info of each stream in turn; it returns the first
// that does not answer, and why.
func (o *Objects) probe(ctx context.Context) (string, error) {
	return firstUnanswered(probed, func(name string) error {
		cctx, cancel := context.WithTimeout(ctx, CallDeadline)
		defer cancel()
		_, err := o.js.Stream(cctx, name)
		return err
	})
}

// firstUnanswered asks each of streams in turn and returns the first that
// does not answer, and why. When one does not, those before it are asked
// again: they answered before it failed, and a server that went down in
// between took them down too, so that an outage of the server is named
// by the first stream whatever moment of the probe it began in, and one
// of a single stream (its leader lost) by that stream.
func firstUnanswered(streams []string, ask func(name string) error) (string, error) {
	for i, name := range streams {
		if err := ask(name); err != nil {
			if before, beforeErr := firstUnanswered(streams[:i], ask); beforeErr != nil {
				return before, beforeErr
			}
			return name, err
		}
	}
	return "", nil
}

// StartWait is how long a coordinator or a worker that starts waits for
// runner's streams to answer (a cluster electing their leaders) before it
// fails.
const StartWait = 30 * time.Second

// Unanswered reports whether err says that no server answered a JetStream
// request (none is up, or none leads the stream or consumer now) rather
// than that one refused it.
func Unanswered(err error) bool {
	return errors.Is(err, nats.ErrNoResponders) || errors.Is(err, jetstream.ErrNoStreamResponse) ||
		errors.Is(err, nats.ErrTimeout) || errors.Is(err, context.DeadlineExceeded)
}

// WhileUnanswered calls do, and again while no server answers it (see
// Unanswered), until within has passed or ctx ends; it returns do's last
// error.
func WhileUnanswered(ctx context.Context, within time.Duration, do func() error) error {
	return Retry(ctx, Within(within, Unanswered), do)
}

// Retry calls do, and again while its error is one again retries and ctx
// lasts, pausing 50 ms after the first failure and twice as long after
// each next one, up to a second; it returns do's last error. It is the
// one retry loop of the calls that wait for the server: publishing,
// acknowledging, a cluster electing its leaders, a bundle carried while
// the server restarts.
func Retry(ctx context.Context, again func(error) bool, do func() error) error {
	for pause := 50 * time.Millisecond; ; pause = min(2*pause, time.Second) {
		err := do()
		if err == nil || !again(err) || !sleep(ctx, pause) {
			return err
		}
	}
}

// Within is again until d has passed from now, then never.
func Within(d time.Duration, again func(error) bool) func(error) bool {
	deadline := time.Now().Add(d)
	return func(err error) bool { return again(err) && !time.Now().After(deadline) }
}

// sleep waits d, or until ctx ends; it reports whether d passed.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
