package cmd

import (
	"cmp"
	"context"
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/runnerdev/runner/internal/agentproc"
	"github.com/runnerdev/runner/internal/job"
	"github.com/runnerdev/runner/mapreduce"
	"github.com/runnerdev/runner/workflow"
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
	w, err := job.OpenWorker(id, job.Options{Store: g.store(), Stdout: g.stderr, Stderr: g.stderr}, a.Emit)
	if err != nil {
		return err
	}
	wf := w.Workflow()
	if wf.Mode != workflow.MapReduce {
		return usagef("job %s is a standard workflow; it has no map items", id)
	}
	// The agent runs in the directory runner was started in, so that it
	// finds the job's repository and the same place in it.
	refs := mapreduce.JobRefs{ID: id, ItemBranches: w.Meta().ItemBranches}
	trees, err := mapreduce.OpenWorktrees(ctx, refs, wf.Map, w.Executor().Env, w.Path)
	if err != nil {
		return err
	}
	var live *mapreduce.Live
	if tag {
		live = a.Live()
	}
	return a.Serve(ctx, stdin, mapreduce.NewRunner(w.Executor(), w.Scope(), wf.Map, w.ItemLogPath, trees, live))
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

// dispatcher is where j's items run: NATS workers (connectNATS), nil for
// this process, or a pool of agents started from this executable (which
// is what runs under tests too), given the job's secrets in their
// environment, which send the items' output to live as it comes when it is
// not nil.
func (o parallelOptions) dispatcher(g *globalOptions, j *job.Job, live *mapreduce.Live) mapreduce.NewDispatcher {
	if o.nats != nil {
		return o.nats.dispatcher(j, live)
	}
	if o.dispatchMode() != dispatchAgents {
		return nil
	}
	return func(h mapreduce.Host) (mapreduce.Dispatcher, error) {
		exe, err := os.Executable()
		if err != nil {
			return nil, err
		}
		dir, err := filepath.Abs(g.store().Dir)
		if err != nil {
			return nil, err
		}
		command := []string{exe, "agent"}
		if live != nil {
			command = append(command, "--tag")
		}
		cfg := agentproc.Config{
			Command: append(command, "--state-dir", dir, j.ID()),
			Env:     append(os.Environ(), j.SecretEnv()...),
			Stderr:  g.stderr,
			Live:    live,
		}
		return agentproc.New(cfg)(h)
	}
}

// live is where the items' output is shown as it comes: the commands'
// own streams of t with --tag, else nowhere (nil).
func (o parallelOptions) live(t *terminal) *mapreduce.Live {
	if !o.Tag {
		return nil
	}
	return &mapreduce.Live{Stdout: t.commandStdout(), Stderr: t.commandStderr()}
}
