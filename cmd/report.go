package cmd

import (
	"context"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/runnerdev/runner/dlq"
	"github.com/runnerdev/runner/internal/report"
	"github.com/runnerdev/runner/internal/state"
	"github.com/runnerdev/runner/internal/workspace"
)

func newReportCommand(g *globalOptions) *cobra.Command {
	var out string
	c := &cobra.Command{
		Use:   "report JOB",
		Short: "Write a self-contained HTML page picturing a job",
		Long: `Write an HTML page (no scripts, no outside resources) with the job's summary,
a timeline with a lane per step and per agent slot (each attempt a bar,
failures in red, retry delays as dashed lines, circuit-breaker pauses
shaded, the time between two runs of the job a break of its own), a table
of the steps, and as the job has them its merges (conflicts in red, with
their paths), its branches with the command that merges the job branch,
and its dead-letter queue.`,
		Example: "  runner report resize-20261122-101500-a1b2c3 -o report.html",
		Args:    exactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			return runReport(c.Context(), g, args[0], out)
		},
	}
	outFileFlag(c, &out, "write to this file (default: stdout)")
	return takesJob(g, c)
}

func runReport(ctx context.Context, g *globalOptions, jobID, out string) error {
	j, err := g.store().Open(jobID)
	if err != nil {
		return err
	}
	settleCounts(g, &j.Meta)
	page := report.Job{Meta: j.Meta, EventLog: j.Layout().Events}
	if _, err := os.Stat(j.Layout().DLQ); err == nil {
		if page.DLQ, page.DLQTotal, err = firstDLQItems(g, jobID); err != nil {
			return err
		}
	}
	w := g.stdout
	if out != "" {
		f, err := os.OpenFile(out, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
		if err != nil {
			return err
		}
		defer f.Close()
		w = f
	}
	if on, _ := ranOnJobBranch(j); on {
		page.Branches = jobBranches(ctx, j.Meta)
	}
	if err := report.WriteHTML(w, page); err != nil {
		return err
	}
	if out != "" {
		fmt.Fprintf(g.stderr, "wrote %s\n", out)
	}
	return nil
}

// reportDLQRows bounds the items of the DLQ that the page lists.
const reportDLQRows = 1000

// firstDLQItems returns the first reportDLQRows items of a job's DLQ and
// how many it holds.
func firstDLQItems(g *globalOptions, jobID string) ([]dlq.Item, int, error) {
	_, d, err := openDLQ(g, jobID)
	if err != nil {
		return nil, 0, err
	}
	defer d.Close()
	items, err := listItems(d, "", reportDLQRows)
	if err != nil {
		return nil, 0, err
	}
	n, err := d.Count()
	return items, n, err
}

// jobBranches is the git side of a job that ran on a job branch, as the
// repository runner runs in has it now.
func jobBranches(ctx context.Context, m state.Meta) *report.Branches {
	b := &report.Branches{Job: workspace.Branch(m.ID), Target: m.TargetBranch}
	got, err := workspace.JobRefs{ID: m.ID, ItemBranches: m.ItemBranches, Target: m.TargetBranch}.Branches(ctx)
	if err != nil {
		return &report.Branches{Job: b.Job, Target: b.Target, Unknown: err.Error()}
	}
	b.Gone, b.Merged, b.Items = got.Gone, got.Merged, got.Items
	return b
}
