package cmd

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/spf13/cobra"

	"github.com/runnerdev/runner/internal/itemtask"
	"github.com/runnerdev/runner/internal/jobenv"
	"github.com/runnerdev/runner/internal/natsconn"
	"github.com/runnerdev/runner/internal/natscoord"
	"github.com/runnerdev/runner/internal/progress"
	"github.com/runnerdev/runner/internal/state"
	"github.com/runnerdev/runner/mapreduce"
	"github.com/runnerdev/runner/workflow"
)

// natsOptions are the flags that reach a NATS server, named as the nats
// CLI names them, and the worker pool (SPEC §11.8).
type natsOptions struct {
	Conn  natsconn.Connection
	Queue string
	// Replicas of runner's streams and bucket (0: the workflow's
	// distributed.replicas, else natsconn.DefaultReplicas).
	Replicas int
}

// AddFlags adds the flags; urlHelp and queueHelp are the help of --nats
// (with the environment variables it falls back on) and --queue, which
// differ between a run and a worker.
func (o *natsOptions) AddFlags(c *cobra.Command, urlHelp, queueHelp string) {
	f := c.Flags()
	f.StringVar(&o.Conn.URL, "nats", "", urlHelp)
	f.StringVar(&o.Conn.Context, "nats-context", "", "a nats CLI context: its name or JSON file (env NATS_CONTEXT)")
	f.StringVar(&o.Conn.Creds, "nats-creds", "", "NATS credentials file (env NATS_CREDS)")
	f.StringVar(&o.Conn.NKey, "nats-nkey", "", "NATS NKey seed file (env NATS_NKEY)")
	f.StringVar(&o.Conn.User, "nats-user", "", "NATS user (env NATS_USER)")
	f.StringVar(&o.Conn.Password, "nats-password", "", "NATS password (env NATS_PASSWORD)")
	f.StringVar(&o.Conn.TLSCert, "nats-tlscert", "", "TLS client certificate (env NATS_CERT)")
	f.StringVar(&o.Conn.TLSKey, "nats-tlskey", "", "TLS client key (env NATS_KEY)")
	f.StringVar(&o.Conn.TLSCA, "nats-tlsca", "", "TLS certificate authority (env NATS_CA)")
	f.StringVar(&o.Queue, "queue", "", queueHelp)
	f.Var((*replicasFlag)(&o.Replicas), "nats-replicas", "replicas of runner's NATS streams and bucket, 1 to 5: made with them, or raised to them if they have fewer (default: the workflow's distributed.replicas, else 3 on a cluster of 3 servers or more, else 1)")
}

// replicasFlag is an int flag that refuses what a stream cannot have.
type replicasFlag int

func (r *replicasFlag) String() string { return strconv.Itoa(int(*r)) }
func (r *replicasFlag) Type() string   { return "int" }

func (r *replicasFlag) Set(s string) error {
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || n > workflow.MaxReplicas {
		return fmt.Errorf("must be 1 to %d", workflow.MaxReplicas)
	}
	*r = replicasFlag(n)
	return nil
}

// natsRun is a job's connection to the NATS server its items go through.
type natsRun struct {
	conn          *nats.Conn
	where         state.Dist
	maxDeliveries int
	replicas      int             // asked for; 0: natsconn.DefaultReplicas
	batch         int             // the most tasks a message carries (--nats-batch); 0: one
	watch         natscoord.Watch // the job's tasks on the workers, for the status line
}

// connectNATS connects a run, resume or dlq retry of wf to NATS when the
// flags, RUNNER_NATS or the job's record (stored: nil for a new job) ask
// for it, after refusing what cannot run there; nil when its items run
// here. A stray NATS_URL or NATS_CONTEXT never sends a job's items away,
// and RUNNER_NATS leaves a standard workflow (which has no items) alone.
func (o *parallelOptions) connectNATS(ctx context.Context, wf *workflow.Workflow, stored *state.Dist) error {
	flags := o.NATS.Conn
	if flags.URL == "" && flags.Context == "" && os.Getenv("RUNNER_NATS") == "" && stored == nil {
		if o.NATS.Queue != "" || o.MaxDeliveries > 0 || o.NATS.Replicas > 0 || o.NATSBatch > 0 {
			return usagef("--queue, --max-deliveries, --nats-replicas and --nats-batch are for items run on NATS workers: add --nats URL or --nats-context NAME")
		}
		return nil
	}
	if stored != nil && flags.URL == "" && flags.Context == "" {
		flags.URL, flags.Context = stored.URL, stored.Context
	}
	if wf.Mode != workflow.MapReduce {
		if flags.URL == "" && flags.Context == "" {
			return nil // RUNNER_NATS is where items go; a standard workflow has none
		}
		return usagef("--nats runs a MapReduce workflow's items on workers; %s is a standard workflow", wf.File)
	}
	if err := mapreduce.Supports(wf, natscoord.New(natscoord.Options{})); err != nil {
		return usagef("%v, or run without --nats", err)
	}
	var fromFile workflow.Distributed
	if wf.Distributed != nil {
		fromFile = *wf.Distributed
	}
	queue := cmp.Or(o.NATS.Queue, storedQueue(stored), fromFile.Queue, natsconn.DefaultQueue)
	if err := natsconn.CheckQueue(queue); err != nil {
		return usagef("--queue: %v", err)
	}
	c := flags.FromEnv(os.Getenv, false)
	conn, err := natsconn.Connect(ctx, c, "runner "+wf.Name)
	if err != nil {
		return err
	}
	o.nats = &natsRun{
		conn:          conn,
		where:         state.Dist{URL: c.Redacted(), Context: c.Context, Queue: queue},
		maxDeliveries: cmp.Or(o.MaxDeliveries, fromFile.MaxDeliveries, natsconn.DefaultMaxDeliveries),
		replicas:      cmp.Or(o.NATS.Replicas, fromFile.Replicas),
		batch:         o.NATSBatch,
	}
	return nil
}

func storedQueue(d *state.Dist) string {
	if d == nil {
		return ""
	}
	return d.Queue
}

// refuseCarriedSecrets refuses a run on NATS whose secrets would travel
// with its spec: each worker must take them from its own environment.
func refuseCarriedSecrets(ctx context.Context, wf *workflow.Workflow, source []byte, set map[string]string, profile string) error {
	carried, err := jobenv.CarriedSecrets(ctx, wf, source, set, profile)
	if err != nil || len(carried) == 0 {
		return err
	}
	return usagef("secret %s is given %s: on NATS, each worker takes its secrets from its own environment (secrets never go on NATS); use a reference such as \"${env:NAME}\" and set NAME where the workers run", carried[0].Name, carried[0].Where)
}

// dispatcher is where a job's items go on NATS, showing each item's output
// on live (nil: not) as the workers send it.
func (r *natsRun) dispatcher(live *itemtask.Live) itemtask.Backend {
	return natscoord.New(natscoord.Options{Conn: r.conn, Dist: r.where, MaxDeliveries: r.maxDeliveries, Replicas: r.replicas, Batch: r.batch, Version: Version, Warn: os.Stderr, Live: live, Watch: &r.watch})
}

// close closes the connection once its job is done with it.
func (r *natsRun) close() {
	if r != nil {
		r.conn.Close()
	}
}

// describe is where the job's items go, for its first lines.
func (r *natsRun) describe() string {
	where := cmp.Or(r.where.URL, "context "+r.where.Context)
	return fmt.Sprintf("items run on NATS workers of queue %s at %s", r.where.Queue, where)
}

// showQueue shows on the status line how the job's queue stands, read
// every 500 ms, until the returned function is called: its workers' busy
// slots and those pulling, the job's tasks waiting to be delivered
// again, their worker lost, and a stream that does not answer.
func (r *natsRun) showQueue(d *progress.Display) (stop func()) {
	// Only stop ends it: an interrupted job's queue is still shown while
	// its dispatcher closes.
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			pulling, busy, err := natsconn.QueueSlots(ctx, r.conn, r.where.Queue)
			if out := r.watch.Outage(); err == nil || out.Down() {
				s := r.watch.Stranded()
				d.SetQueue(progress.Queue{
					Name: r.where.Queue, Pulling: pulling, Busy: max(busy-s.Tasks, 0), // a lost worker's slot is not busy
					Stranded: s.Tasks, Lost: s.Workers, AckWait: s.AckWait, Redelivery: s.Until,
					Unavailable: out.Stream, DownSince: out.Since,
				})
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(500 * time.Millisecond):
			}
		}
	}()
	return func() { cancel(); <-done }
}
