package natsconn

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// DefaultAckWait is how long a worker may go without a heartbeat before
// the server gives its task to another worker.
const DefaultAckWait = 30 * time.Second

// Objects are the streams, consumers and bucket both sides use. Whichever
// side starts first creates them, with the replicas asked for (see
// Replicas); one that exists with another config is used as it is, with a
// warning, except that its replicas are raised when asked for explicitly.
type Objects struct {
	js      jetstream.JetStream
	warn    io.Writer
	asked   int                // the replicas asked for (flag or file); 0: the default
	want    int                // the replicas new objects get: asked, else the default
	Tasks   jetstream.Stream   // RUNNER_TASKS
	Results jetstream.Stream   // RUNNER_RESULTS
	Jobs    jetstream.KeyValue // RUNNER_JOBS, the jobs' specs

	mu   sync.Mutex
	have map[string]int // the replicas of each object's stream, as opened
}

// OpenObjects creates (or opens) the streams and the bucket with the
// replicas asked for; warn gets the warnings about them. While no server
// answers (a cluster electing their leaders) it tries again, within
// StartWait, saying so once.
func OpenObjects(ctx context.Context, js jetstream.JetStream, warn io.Writer, replicas int) (*Objects, error) {
	o := &Objects{js: js, warn: warn, asked: replicas, want: cmp.Or(replicas, DefaultReplicas(js.Conn())), have: map[string]int{}}
	said := false
	err := WhileUnanswered(ctx, StartWait, func() error {
		err := o.OpenStreams(ctx)
		if err == nil {
			err = o.OpenBucket(ctx)
		}
		if Unanswered(err) && !said {
			o.Warnf("%v: waiting up to %s for the NATS servers to answer", err, StartWait)
			said = true
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	return o, nil
}

// OpenStreams creates (or opens) the tasks and results streams.
func (o *Objects) OpenStreams(ctx context.Context) (err error) {
	if o.Tasks, err = o.stream(ctx, jetstream.StreamConfig{
		Name: TasksStream, Subjects: []string{"runner.task.>"}, Retention: jetstream.WorkQueuePolicy,
		Storage: jetstream.FileStorage, Duplicates: duplicateSpan, MaxMsgSize: MaxPayload,
	}); err != nil {
		return err
	}
	o.Results, err = o.stream(ctx, jetstream.StreamConfig{
		Name: ResultsStream, Subjects: []string{"runner.result.>"}, Retention: jetstream.WorkQueuePolicy,
		Storage: jetstream.FileStorage, Duplicates: duplicateSpan, MaxAge: 7 * 24 * time.Hour,
	})
	return err
}

// OpenBucket creates (or opens) the jobs bucket.
func (o *Objects) OpenBucket(ctx context.Context) (err error) {
	cctx, cancel := context.WithTimeout(ctx, CallDeadline)
	defer cancel()
	create := func(replicas int) error {
		kv, err := o.js.CreateKeyValue(cctx, jetstream.KeyValueConfig{Bucket: JobsBucket, History: 1, Storage: jetstream.FileStorage, Replicas: replicas})
		if err == nil {
			o.Jobs = kv
		}
		return err
	}
	err = o.create(cctx, jobsStream, create, jetstream.ErrBucketExists)
	if err == nil && o.Jobs == nil {
		o.Jobs, err = o.js.KeyValue(cctx, JobsBucket)
	}
	if err != nil {
		return fmt.Errorf("NATS bucket %s: %w", JobsBucket, err)
	}
	return nil
}

// jobsStream is the stream that holds the jobs bucket.
const jobsStream = "KV_" + JobsBucket

// Remade returns a fresh objects value, for making the streams or the
// bucket again on a server that lost them: o's handles name the objects
// and go on working once they exist again, and other goroutines use them
// meanwhile, so they are not replaced.
func (o *Objects) Remade() *Objects {
	return &Objects{js: o.js, warn: o.warn, asked: o.asked, want: o.want, have: map[string]int{}}
}

// Lost reports whether a failed pull from the consumer durable of stream
// failed because the server no longer has it: it was restarted on an
// empty store (its directory lost), or someone deleted it. An empty pull,
// or a server that does not answer (not asked while the client is
// reconnecting), is not that.
func (o *Objects) Lost(ctx context.Context, pullErr error, stream, durable string) bool {
	if pullErr == nil || errors.Is(pullErr, nats.ErrTimeout) || errors.Is(pullErr, context.DeadlineExceeded) || ctx.Err() != nil ||
		!o.js.Conn().IsConnected() {
		return false
	}
	ctx, cancel := context.WithTimeout(ctx, CallDeadline)
	defer cancel()
	_, err := o.js.Consumer(ctx, stream, durable)
	return errors.Is(err, jetstream.ErrConsumerNotFound) || errors.Is(err, jetstream.ErrStreamNotFound)
}

func (o *Objects) stream(ctx context.Context, cfg jetstream.StreamConfig) (jetstream.Stream, error) {
	ctx, cancel := context.WithTimeout(ctx, CallDeadline)
	defer cancel()
	var s jetstream.Stream
	err := o.create(ctx, cfg.Name, func(replicas int) error {
		cfg.Replicas = replicas
		made, err := o.js.CreateStream(ctx, cfg)
		if err == nil {
			s = made
		}
		return err
	}, jetstream.ErrStreamNameAlreadyInUse)
	if err == nil && s == nil {
		s, err = o.js.Stream(ctx, cfg.Name)
	}
	if err != nil {
		return nil, fmt.Errorf("NATS stream %s: %w", cfg.Name, err)
	}
	return s, nil
}

// consumer returns the durable pull consumer cfg names on stream.
func (o *Objects) consumer(ctx context.Context, stream string, cfg jetstream.ConsumerConfig) (jetstream.Consumer, error) {
	ctx, cancel := context.WithTimeout(ctx, CallDeadline)
	defer cancel()
	c, err := o.js.CreateConsumer(ctx, stream, cfg)
	if errors.Is(err, jetstream.ErrConsumerExists) {
		o.Warnf("NATS consumer %s/%s exists with another config; runner uses it as it is", stream, cfg.Durable)
		c, err = o.js.Consumer(ctx, stream, cfg.Durable)
	}
	if err != nil {
		return nil, fmt.Errorf("NATS consumer %s/%s: %w", stream, cfg.Durable, err)
	}
	return c, nil
}

// WorkerTasks is the consumer all workers of queue pull from.
func (o *Objects) WorkerTasks(ctx context.Context, queue string, ackWait time.Duration) (jetstream.Consumer, error) {
	return o.consumer(ctx, TasksStream, jetstream.ConsumerConfig{
		Durable: WorkersConsumer(queue), FilterSubject: "runner.task." + queue + ".>",
		AckPolicy: jetstream.AckExplicitPolicy, AckWait: ackWait, MaxDeliver: -1, MaxAckPending: -1, MaxWaiting: 4096,
	})
}

// JobResults is the consumer of one job's results.
func (o *Objects) JobResults(ctx context.Context, key string) (jetstream.Consumer, error) {
	return o.consumer(ctx, ResultsStream, jetstream.ConsumerConfig{
		Durable: JobConsumer(key), FilterSubject: JobResultsSubject(key),
		AckPolicy: jetstream.AckExplicitPolicy, AckWait: 60 * time.Second, InactiveThreshold: 7 * 24 * time.Hour,
	})
}

// Warnf writes a warning about the NATS objects.
func (o *Objects) Warnf(format string, args ...any) { o.Notef("warning: "+format, args...) }

// Notef writes a note about the NATS objects.
func (o *Objects) Notef(format string, args ...any) {
	if o.warn != nil {
		fmt.Fprintf(o.warn, "runner: "+format+"\n", args...)
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
	ctx, cancel := context.WithTimeout(ctx, CallDeadline)
	defer cancel()
	c, err := js.Consumer(ctx, TasksStream, WorkersConsumer(queue))
	if errors.Is(err, jetstream.ErrConsumerNotFound) || errors.Is(err, jetstream.ErrStreamNotFound) {
		return 0, 0, nil
	}
	if err != nil {
		return 0, 0, err
	}
	info := c.CachedInfo()
	return info.NumWaiting, info.NumAckPending, nil
}
