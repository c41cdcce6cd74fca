package cmd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"runtime"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/spf13/cobra"

	"github.com/runnerdev/runner/internal/eventlog"
	"github.com/runnerdev/runner/internal/itemrun"
	"github.com/runnerdev/runner/internal/itemtask"
	"github.com/runnerdev/runner/internal/natsconn"
	"github.com/runnerdev/runner/internal/natsworker"
)

type workerOptions struct {
	natsOptions
	Concurrency  int
	WorkDir      string
	Name         string
	AckWait      time.Duration
	DrainTimeout time.Duration
	IdleExit     time.Duration
	SummaryEvery time.Duration
}

func (o *workerOptions) AddFlags(c *cobra.Command) {
	o.natsOptions.AddFlags(c, "the NATS server to pull tasks from, a comma-separated list for a cluster (env RUNNER_NATS, then NATS_URL; default: the nats CLI's selected context)",
		"the worker pool to pull tasks from: the queue a run sends its items to, by its --queue or its workflow's distributed.queue (default \""+natsconn.DefaultQueue+"\")")
	f := c.Flags()
	f.Var((*positiveInt)(&o.Concurrency), "concurrency", "items at once (default: the number of CPUs)")
	f.StringVar(&o.WorkDir, "work-dir", "", "the directory items run in: the same code as the coordinator's; a clone of its repository for items that commit (default: the current directory)")
	f.StringVar(&o.Name, "name", "", "this worker's name in results and events (default: HOST-PID)")
	f.DurationVar(&o.AckWait, "ack-wait", natsconn.DefaultAckWait, "how long a task may go without a heartbeat before another worker gets it (when this worker creates the queue's consumer)")
	f.DurationVar(&o.DrainTimeout, "drain-timeout", 0, "on SIGINT/SIGTERM, how long running items may go on before they are stopped (default: until they end)")
	f.DurationVar(&o.IdleExit, "idle-exit", 0, "exit 0 after this long without a task (default: never)")
	f.DurationVar(&o.SummaryEvery, "summary-every", time.Minute, "how often to print a line counting the tasks ended and the slots busy (0: never)")
}

func newWorkerCommand(g *globalOptions) *cobra.Command {
	var o workerOptions
	c := &cobra.Command{
		Use:   "worker",
		Short: "Run map items that jobs send through NATS (runner run --nats)",
		Long: `Pull the tasks of one queue from a NATS JetStream server and run each job's
map template on them, in --work-dir, with this machine's environment: its
secrets are taken from here, never sent through NATS. A job's results go
back to the runner run that sent them. Items that commit (map.isolation:
worktree) run in worktrees of the git clone --work-dir is in (or of one
the worker makes), from the commit the task names, which the worker
fetches from the job's bundles on the server; their commits go back the
same way. On SIGINT or SIGTERM the worker takes
no new task, lets its items end (within --drain-timeout) and exits.

A worker started before its server waits for it (for ever, or up to
--idle-exit), trying again every 5 s at most. It prints a line per task
(job, item, result, duration) and, every --summary-every, the tasks ended
and the slots busy.`,
		Example: `  nats-server -js -sd /var/lib/nats &
  runner worker --nats nats://127.0.0.1:4222 --concurrency 4
  runner worker --nats-context prod --queue gpu --work-dir /srv/checkout`,
		Args: exactArgs(0),
		RunE: func(c *cobra.Command, args []string) error {
			return runWorker(c.Context(), g, o)
		},
	}
	o.AddFlags(c)
	return c
}

func runWorker(ctx context.Context, g *globalOptions, o workerOptions) error {
	conn := o.Conn.FromEnv(os.Getenv, true)
	if conn.URL == "" && conn.Context == "" {
		conn.Context = natsconn.SelectedContext(os.Getenv)
	}
	if conn.URL == "" && conn.Context == "" {
		return usagef("runner worker needs a NATS server: --nats URL, --nats-context NAME, RUNNER_NATS, NATS_URL or a context selected with `nats context select`")
	}
	queue := o.Queue
	if queue == "" {
		queue = natsconn.DefaultQueue
	}
	if err := natsconn.CheckQueue(queue); err != nil {
		return usagef("--queue: %v", err)
	}
	if o.AckWait < 6*time.Millisecond {
		return usagef("--ack-wait %s is too short: heartbeats go every sixth of it", o.AckWait)
	}
	if o.WorkDir != "" {
		if err := os.Chdir(o.WorkDir); err != nil {
			return usagef("--work-dir: %v", err)
		}
	}
	if o.Name == "" {
		host, _ := os.Hostname()
		o.Name = fmt.Sprintf("%s-%d", host, os.Getpid())
	}
	if o.Concurrency == 0 {
		o.Concurrency = runtime.NumCPU()
	}
	store, release, err := natsworker.NewStore(os.TempDir())
	if err != nil {
		return err
	}
	defer release()
	logf := func(format string, args ...any) {
		fmt.Fprintf(g.stderr, "runner worker %s: "+format+"\n", append([]any{o.Name}, args...)...)
	}
	nc, err := connectWorker(ctx, conn, o, logf)
	if err != nil || nc == nil {
		return err
	}
	defer nc.Close()
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	w, err := natsworker.NewWorker(ctx, natsworker.WorkerOptions{
		Conn: nc, Queue: queue, Concurrency: o.Concurrency, Name: o.Name, AckWait: o.AckWait, Replicas: o.Replicas,
		DrainTimeout: o.DrainTimeout, IdleExit: o.IdleExit, SummaryEvery: o.SummaryEvery, StoreDir: store, Log: g.stderr, LogBeats: g.Verbose,
		Watchdog: []string{exe, "worker-watchdog"},
		Open: func(ctx context.Context, portable json.RawMessage, dir string, emit func(eventlog.Event), live *itemtask.Live) (itemtask.Opened, error) {
			return itemrun.OpenPortable(ctx, portable, dir, o.Name, emit, live)
		},
	})
	if err != nil {
		return err
	}
	logf("pulling queue %s at NATS %s (streams %s), %d at once", queue, conn.Where(), w.Replication(), o.Concurrency)
	if err := w.Run(ctx); err != nil {
		return err
	}
	return context.Cause(ctx) // a signal's exit code, after draining
}

// errIdle ends the wait for a server that did not come up within
// --idle-exit.
var errIdle = errors.New("idle")

// connectWorker connects the worker o to its server, waiting for it while
// it is not up; nil, nil when it did not come up within --idle-exit: the
// worker exits 0 as it would after that long without a task.
func connectWorker(ctx context.Context, conn natsconn.Connection, o workerOptions, logf func(string, ...any)) (*nats.Conn, error) {
	if o.IdleExit > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, o.IdleExit, errIdle)
		defer cancel()
	}
	nc, err := natsconn.ConnectWaiting(ctx, conn, "runner worker "+o.Name, logf)
	if errors.Is(err, errIdle) {
		logf("no NATS server came up within --idle-exit %s: exiting", o.IdleExit)
		return nil, nil
	}
	return nc, err
}

// newWatchdogCommand is `runner worker-watchdog`, the process a worker
// starts to kill its items' process groups when their leases run out (see
// natsworker.ServeWatchdog): not for users, so hidden.
func newWatchdogCommand() *cobra.Command {
	return &cobra.Command{
		Use:    "worker-watchdog MARKS_DIR",
		Short:  "Kill a worker's items whose leases ran out (started by runner worker)",
		Hidden: true,
		Args:   exactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			natsworker.IgnoreSignals()
			return natsworker.ServeWatchdog(c.InOrStdin(), args[0])
		},
	}
}
