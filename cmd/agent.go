package cmd

import (
	"cmp"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/runnerdev/runner/internal/agentproc"
	"github.com/runnerdev/runner/internal/itemrun"
	"github.com/runnerdev/runner/internal/itemtask"
	"github.com/runnerdev/runner/internal/job"
	"github.com/runnerdev/runner/mapreduce"
)

// newAgentCommand is `runner agent JOB`, the process that runs a job's map
// items for `--dispatch agents` (see package agentproc): not for users, so
// hidden from help.
func newAgentCommand(g *globalOptions) *cobra.Command {
	var tag bool
	c := &cobra.Command{
		Use:    "agent JOB",
		Short:  "Run a job's map items sent as JSON lines on stdin (used by the job's own process)",
		Hidden: true,
		Example: `  # as runner run --dispatch agents starts each of its agents:
  runner agent --state-dir /abs/.runner resize-20261122-101500-a1b2c3`,
		Args: exactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			return runAgent(c.Context(), g, c.InOrStdin(), args[0], tag)
		},
	}
	c.Flags().BoolVar(&tag, "tag", false, "send the items' output to the coordinator as it comes, each line prefixed with the item's id")
	return c
}

// runAgent opens the job without its lock, log or journal and serves the
// protocol on stdin and stdout until stdin ends. Only protocol messages go
// to stdout: the steps' live output goes to stderr (the map template's
// goes to item logs, and with tag to the coordinator too).
func runAgent(ctx context.Context, g *globalOptions, stdin io.Reader, id string, tag bool) error {
	a := agentproc.NewAgent(g.stdout)
	var live *itemtask.Live
	if tag {
		live = a.Live()
	}
	r, err := itemrun.OpenStored(ctx, id, job.Options{Store: g.store(), Stdout: g.stderr, Stderr: g.stderr}, a.Emit, live)
	if errors.Is(err, itemrun.ErrNoMap) {
		return usagef("job %s is a standard workflow; it has no map items", id)
	}
	if err != nil {
		return err
	}
	return a.Serve(ctx, stdin, r)
}

// Where a job's map items run.
const (
	dispatchLocal  = "local"  // in this process
	dispatchAgents = "agents" // in `runner agent` processes
)

// dispatchMode is where items run: --dispatch, else $RUNNER_DISPATCH,
// else in this process.
func (o parallelOptions) dispatchMode() string {
	return cmp.Or(o.Dispatch, os.Getenv("RUNNER_DISPATCH"), dispatchLocal)
}

func (o parallelOptions) validate() error {
	if m := o.dispatchMode(); m != dispatchLocal && m != dispatchAgents {
		return usagef("--dispatch (or RUNNER_DISPATCH) must be %s or %s, not %q", dispatchLocal, dispatchAgents, m)
	}
	return nil
}

// dispatcher is where j's items run: NATS workers (connectNATS), this
// process, or a pool of agents started from this executable (which is
// what runs under tests too), given the job's secrets in their
// environment; the items' output goes to live as it comes when it is not
// nil. It is the one place that chooses.
func (o parallelOptions) dispatcher(g *globalOptions, j *job.Job, live *itemtask.Live) itemtask.Backend {
	if o.nats != nil {
		return o.nats.dispatcher(live)
	}
	if o.dispatchMode() != dispatchAgents {
		return mapreduce.InProcess(live)
	}
	command, err := agentCommand(g, j.ID(), live != nil)
	b := agentproc.New(agentproc.Config{Command: command, Env: append(os.Environ(), j.Secrets().Withheld()...), Stderr: g.stderr, Live: live})
	if err != nil {
		b.Open = func(context.Context, itemtask.Job, itemtask.Host) (itemtask.Dispatcher, error) { return nil, err }
	}
	return b
}

// agentCommand is the command line of an agent of job id: this
// executable with the state directory as an absolute path; with tag the
// agent sends its items' output as it comes.
func agentCommand(g *globalOptions, id string, tag bool) ([]string, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	dir, err := filepath.Abs(g.store().Dir)
	if err != nil {
		return nil, err
	}
	command := []string{exe, "agent"}
	if tag {
		command = append(command, "--tag")
	}
	return append(command, "--state-dir", dir, id), nil
}

// live is where the items' output is shown as it comes: the commands'
// own streams of t with --tag, else nowhere (nil).
func (o parallelOptions) live(t *terminal) *itemtask.Live {
	if !o.Tag {
		return nil
	}
	return &itemtask.Live{Stdout: t.commandStdout(), Stderr: t.commandStderr()}
}
