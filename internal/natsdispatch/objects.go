package natsdispatch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// DefaultAckWait is how long a worker may go without a heartbeat before
// the server gives its task to another worker.
const DefaultAckWait = 30 * time.Second

// objects are the streams, consumers and bucket both sides use. Whichever
// side starts first creates them; one that exists with another config is
// used as it is, with a warning (runner never updates it).
type objects struct {
	js      jetstream.JetStream
	warn    io.Writer
	tasks   jetstream.Stream
	results jetstream.Stream
	jobs    jetstream.KeyValue
}

func openObjects(ctx context.Context, js jetstream.JetStream, warn io.Writer) (*objects, error) {
	o := &objects{js: js, warn: warn}
	if err := o.openStreams(ctx); err != nil {
		return nil, err
	}
	if err := o.openBucket(ctx); err != nil {
		return nil, err
	}
	return o, nil
}

// openStreams creates (or opens) the tasks and results streams.
func (o *objects) openStreams(ctx context.Context) (err error) {
	if o.tasks, err = o.stream(ctx, jetstream.StreamConfig{
		Name: tasksStream, Subjects: []string{"runner.task.>"}, Retention: jetstream.WorkQueuePolicy,
		Storage: jetstream.FileStorage, Duplicates: duplicateSpan, MaxMsgSize: maxPayload,
	}); err != nil {
		return err
	}
	o.results, err = o.stream(ctx, jetstream.StreamConfig{
		Name: resultsStream, Subjects: []string{"runner.result.>"}, Retention: jetstream.WorkQueuePolicy,
		Storage: jetstream.FileStorage, Duplicates: duplicateSpan, MaxAge: 7 * 24 * time.Hour,
	})
	return err
}

// openBucket creates (or opens) the jobs bucket.
func (o *objects) openBucket(ctx context.Context) (err error) {
	cctx, cancel := context.WithTimeout(ctx, callDeadline)
	defer cancel()
	o.jobs, err = o.js.CreateKeyValue(cctx, jetstream.KeyValueConfig{Bucket: jobsBucket, History: 1, Storage: jetstream.FileStorage})
	if errors.Is(err, jetstream.ErrBucketExists) {
		o.warnf("NATS bucket %s exists with another config; runner uses it as it is", jobsBucket)
		o.jobs, err = o.js.KeyValue(cctx, jobsBucket)
	}
	if err != nil {
		return fmt.Errorf("NATS bucket %s: %w", jobsBucket, err)
	}
	return nil
}

// remade returns a fresh objects value, for making the streams or the
// bucket again on a server that lost them: o's handles name the objects
// and go on working once they exist again, and other goroutines use them
// meanwhile, so they are not replaced.
func (o *objects) remade() *objects { return &objects{js: o.js, warn: o.warn} }

// lost reports whether a failed pull from the consumer durable of stream
// failed because the server no longer has it: it was restarted on an
// empty store (its directory lost), or someone deleted it. An empty pull,
// or a server that does not answer (not asked while the client is
// reconnecting), is not that.
func (o *objects) lost(ctx context.Context, pullErr error, stream, durable string) bool {
	if pullErr == nil || errors.Is(pullErr, nats.ErrTimeout) || errors.Is(pullErr, context.DeadlineExceeded) || ctx.Err() != nil ||
		!o.js.Conn().IsConnected() {
		return false
	}
	ctx, cancel := context.WithTimeout(ctx, callDeadline)
	defer cancel()
	_, err := o.js.Consumer(ctx, stream, durable)
	return errors.Is(err, jetstream.ErrConsumerNotFound) || errors.Is(err, jetstream.ErrStreamNotFound)
}

func (o *objects) stream(ctx context.Context, cfg jetstream.StreamConfig) (jetstream.Stream, error) {
	ctx, cancel := context.WithTimeout(ctx, callDeadline)
	defer cancel()
	s, err := o.js.CreateStream(ctx, cfg)
	if errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
		o.warnf("NATS stream %s exists with another config; runner uses it as it is", cfg.Name)
		s, err = o.js.Stream(ctx, cfg.Name)
	}
	if err != nil {
		return nil, fmt.Errorf("NATS stream %s: %w", cfg.Name, err)
	}
	return s, nil
}

// consumer returns the durable pull consumer cfg names on stream.
func (o *objects) consumer(ctx context.Context, stream string, cfg jetstream.ConsumerConfig) (jetstream.Consumer, error) {
	ctx, cancel := context.WithTimeout(ctx, callDeadline)
	defer cancel()
	c, err := o.js.CreateConsumer(ctx, stream, cfg)
	if errors.Is(err, jetstream.ErrConsumerExists) {
		o.warnf("NATS consumer %s/%s exists with another config; runner uses it as it is", stream, cfg.Durable)
		c, err = o.js.Consumer(ctx, stream, cfg.Durable)
	}
	if err != nil {
		return nil, fmt.Errorf("NATS consumer %s/%s: %w", stream, cfg.Durable, err)
	}
	return c, nil
}

// workerTasks is the consumer all workers of queue pull from.
func (o *objects) workerTasks(ctx context.Context, queue string, ackWait time.Duration) (jetstream.Consumer, error) {
	return o.consumer(ctx, tasksStream, jetstream.ConsumerConfig{
		Durable: workersConsumer(queue), FilterSubject: "runner.task." + queue + ".>",
		AckPolicy: jetstream.AckExplicitPolicy, AckWait: ackWait, MaxDeliver: -1, MaxAckPending: -1, MaxWaiting: 4096,
	})
}

// jobResults is the consumer of one job's results.
func (o *objects) jobResults(ctx context.Context, key string) (jetstream.Consumer, error) {
	return o.consumer(ctx, resultsStream, jetstream.ConsumerConfig{
		Durable: jobConsumer(key), FilterSubject: "runner.result." + key + ".>",
		AckPolicy: jetstream.AckExplicitPolicy, AckWait: 60 * time.Second, InactiveThreshold: 7 * 24 * time.Hour,
	})
}

func (o *objects) warnf(format string, args ...any) {
	if o.warn != nil {
		fmt.Fprintf(o.warn, "runner: warning: "+format+"\n", args...)
	}
}

// QueueSlots is how queue's workers stand now: pulling are those with a
// free slot (each waits for a task with one pull), busy their slots
// running a task not acknowledged yet (of any job; a dead worker's until
// the server delivers it again). Both are 0 when no worker ever pulled
// from it.
func QueueSlots(ctx context.Context, nc *nats.Conn, queue string) (pulling, busy int, err error) {
	js, err := jetstream.New(nc)
	if err != nil {
		return 0, 0, err
	}
	ctx, cancel := context.WithTimeout(ctx, callDeadline)
	defer cancel()
	c, err := js.Consumer(ctx, tasksStream, workersConsumer(queue))
	if errors.Is(err, jetstream.ErrConsumerNotFound) || errors.Is(err, jetstream.ErrStreamNotFound) {
		return 0, 0, nil
	}
	if err != nil {
		return 0, 0, err
	}
	info := c.CachedInfo()
	return info.NumWaiting, info.NumAckPending, nil
}
