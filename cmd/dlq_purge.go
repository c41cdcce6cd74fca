package cmd

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/runnerdev/runner/dlq"
	"github.com/runnerdev/runner/internal/dlqsettle"
	"github.com/runnerdev/runner/internal/job"
	"github.com/runnerdev/runner/internal/jobdlq"
	"github.com/runnerdev/runner/mapreduce"
	"github.com/runnerdev/runner/workflow"
)

type dlqPurgeOptions struct {
	OlderThan string
	Yes       bool
	holdOptions
}

func newDLQPurgeCommand(g *globalOptions) *cobra.Command {
	var o dlqPurgeOptions
	c := &cobra.Command{
		Use:   "purge JOB",
		Short: "Delete items from a job's DLQ",
		Long: `Delete a job's DLQ items (all, or those whose last failure is older than
--older-than); they count as skipped afterwards. While a ` + "`dlq retry`" + ` holds
the job's DLQ, purge fails at once with exit code 1, naming it, unless --wait
gives it time. It asks first on a terminal; elsewhere it needs --yes.`,
		Example: `  runner dlq purge resize-20261122-101500-a1b2c3
  runner dlq purge resize-20261122-101500-a1b2c3 --older-than 7d --yes`,
		Args: exactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			return runDLQPurge(c.Context(), g, o, args[0])
		},
	}
	f := c.Flags()
	f.StringVar(&o.OlderThan, "older-than", "", "only items whose last failure is older than this (e.g. 7d, 12h)")
	f.BoolVarP(&o.Yes, "yes", "y", false, "do not ask")
	o.holdOptions.AddFlags(f)
	return takesJob(g, c)
}

func runDLQPurge(ctx context.Context, g *globalOptions, o dlqPurgeOptions, jobID string) error {
	var before time.Time
	if o.OlderThan != "" {
		d, err := workflow.ParseDuration(o.OlderThan)
		if err != nil {
			return usagef("--older-than: %v", err)
		}
		before = time.Now().Add(-d)
	}
	if err := o.holdOptions.validate(); err != nil {
		return err
	}
	j, err := g.store().Open(jobID)
	if err != nil {
		return err
	}
	if !o.Yes {
		if !term.IsTerminal(int(os.Stdin.Fd())) {
			return usagef("dlq purge deletes items for good: pass --yes (stdin is not a terminal to ask on)")
		}
		what := "all items"
		if o.OlderThan != "" {
			what = "the items whose last failure is older than " + o.OlderThan
		}
		if !confirm(os.Stdin, g.stderr, fmt.Sprintf("Delete %s from the dead-letter queue of %s? [y/N] ", what, jobID)) {
			fmt.Fprintln(g.stderr, "nothing deleted")
			return nil
		}
	}
	var (
		purged []dlq.Purged
		held   int
	)
	q := jobdlq.Open(ctx, j.Meta.ID, j.Layout().DLQ, g.stderr)
	if err := o.hold(q, "runner dlq purge "+jobID); err != nil {
		return err
	}
	defer q.Close()
	if err := q.Update(func(d *dlq.DB) (err error) {
		purged, held, err = d.Purge(before)
		return err
	}); err != nil {
		return err
	}
	items := make([]*mapreduce.Item, len(purged))
	for i, p := range purged {
		items[i] = &mapreduce.Item{Index: p.ItemIndex, ID: p.ItemID}
	}
	if err := dlqsettle.RecordPurged(job.Stored{Job: j, ExitCode: exitCode}, q, items); err != nil {
		return err
	}
	if err := q.MarkSettled(j.Layout().ItemStates, j.Update); err != nil {
		return err
	}
	if err := q.Close(); err != nil {
		return err
	}
	fmt.Fprintf(g.stderr, "deleted %d item(s) from the dead-letter queue of %s\n", len(purged), jobID)
	if held > 0 {
		fmt.Fprintf(g.stderr, "%d item(s) left: a running dlq retry holds them\n", held)
	}
	return nil
}
