package cmd

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/runnerdev/runner/dlq"
	"github.com/runnerdev/runner/mapreduce"
	"github.com/runnerdev/runner/workflow"
	"github.com/runnerdev/runner/workflow/state"
)

type dlqRetryOptions struct {
	MaxParallel int
	Filter      string
	DryRun      bool
	Output      string
	Set         []string
}

func newDLQRetryCommand(g *globalOptions) *cobra.Command {
	var o dlqRetryOptions
	c := &cobra.Command{
		Use:   "retry JOB",
		Short: "Re-run the job's agent template on its DLQ items",
		Long: `Re-run the job's agent template (from the workflow copy stored with the
job, with its variables and setup captures) on the items in its DLQ. An item
that succeeds leaves the DLQ; one that fails again gets the failure added to
its history and stays. Two retries of one job may run at once: each item is
claimed by one of them. Exit code 0 when the DLQ is empty afterwards, 3 when
items remain.`,
		Example: `  runner dlq retry resize-20261122-101500-a1b2c3
  runner dlq retry resize-20261122-101500-a1b2c3 --filter 'kind == "timeout"' --max-parallel 2
  runner dlq retry resize-20261122-101500-a1b2c3 --dry-run`,
		Args: exactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			return runDLQRetry(c.Context(), g, o, args[0])
		},
	}
	f := c.Flags()
	f.IntVar(&o.MaxParallel, "max-parallel", 0, "items at once (default: the workflow's max_parallel)")
	f.StringVar(&o.Filter, "filter", "", "only items for which this expression is true")
	f.BoolVar(&o.DryRun, "dry-run", false, "list the items that would be retried, run nothing")
	f.StringVar(&o.Output, "output", "text", "summary format: text or json")
	f.StringArrayVar(&o.Set, "set", nil, "give a secret again: --set KEY=VALUE")
	return c
}

// dlqRetrySummary is the machine-readable end of `dlq retry`.
type dlqRetrySummary struct {
	JobID     string `json:"job_id"`
	Selected  int    `json:"selected"`
	Succeeded int    `json:"succeeded"`
	Failed    int    `json:"failed"`
	Skipped   int    `json:"skipped"` // claimed by another retry, or interrupted
	Remaining int    `json:"remaining"`
	ExitCode  int    `json:"exit_code"`
}

func runDLQRetry(ctx context.Context, g *globalOptions, o dlqRetryOptions, jobID string) error {
	if o.Output != "text" && o.Output != "json" {
		return usagef("--output must be text or json, not %q", o.Output)
	}
	vars, err := parseSet(o.Set)
	if err != nil {
		return err
	}
	selected, err := dlqItems(g, jobID, o.Filter, 0)
	if err != nil {
		return err
	}
	if o.DryRun {
		for _, it := range selected {
			fmt.Fprintf(g.stdout, "%s\t%s\n", it.ItemID, it.Item)
		}
		fmt.Fprintf(g.stderr, "%d item(s) would be retried; nothing was run\n", len(selected))
		return nil
	}
	ui := newTerminal(g, o.Output == "json", nil, "auto")
	j, err := workflow.Attach(jobID, workflow.Options{Store: g.store(), Vars: vars, Stdout: ui.commandStdout(), Stderr: ui.commandStderr(), Listener: ui.event})
	if err != nil {
		return err
	}
	ui.setWorkflow(j.Workflow)
	if j.Workflow.Mode != workflow.MapReduce {
		j.Close()
		return usagef("job %s is a standard workflow; it has no dead-letter queue", jobID)
	}
	q := newJobDLQ(j.State)
	q.owner = claimOwner()
	items := make([]*mapreduce.Item, 0, len(selected))
	for _, it := range selected {
		v, _ := workflow.DecodeValue(it.Item)
		items = append(items, &mapreduce.Item{Index: it.ItemIndex, ID: it.ItemID, Raw: it.Item, Value: v})
	}
	counts, err := mapreduce.RetryDead(ctx, j, items, o.MaxParallel, q)
	remaining := remainingInDLQ(j.State)
	if uerr := j.State.Update(func(m *state.Meta) {
		if m.Items != nil {
			m.Items.Succeeded += counts.Succeeded
			m.Items.DLQ = remaining
		}
	}); err == nil {
		err = uerr
	}
	if cerr := j.Close(); err == nil {
		err = cerr
	}
	sum := dlqRetrySummary{JobID: jobID, Selected: len(items), Succeeded: counts.Succeeded, Failed: counts.Failed, Skipped: counts.Pending, Remaining: remaining}
	switch {
	case err != nil:
		sum.ExitCode = exitCode(err)
	case remaining > 0:
		err = itemsInDLQ{n: remaining, job: jobID}
		sum.ExitCode = ExitItemsInDLQ
	}
	if o.Output == "json" {
		writeJSON(g.stdout, sum)
	} else {
		ui.flushFailures()
		fmt.Fprintf(g.stderr, "dlq retry %s: %d selected, %d succeeded (removed from the DLQ), %d failed again, %d skipped; %d item(s) remain in the DLQ\n",
			jobID, sum.Selected, sum.Succeeded, sum.Failed, sum.Skipped, remaining)
	}
	if err != nil {
		return alreadyReported(err)
	}
	return nil
}

// remainingInDLQ counts a job's queued items (-1 if the queue cannot be read).
func remainingInDLQ(j *state.Job) int {
	d, err := dlq.Open(j.Path(dlqFile), dlq.Options{ReadOnly: true})
	if err != nil {
		return -1
	}
	defer d.Close()
	n, err := d.Count()
	if err != nil {
		return -1
	}
	return n
}
