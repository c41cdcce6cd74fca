package cmd

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/runnerdev/runner/dlq"
	"github.com/runnerdev/runner/eventlog"
	"github.com/runnerdev/runner/jobdlq"
	"github.com/runnerdev/runner/report"
)

func newReportCommand(g *globalOptions) *cobra.Command {
	var out string
	c := &cobra.Command{
		Use:   "report JOB",
		Short: "Write a self-contained HTML page picturing a job",
		Long: `Write an HTML page (no scripts, no outside resources) with the job's summary,
a timeline with one lane per agent slot (each attempt a bar, failures in
red, retry delays as dashed lines, circuit-breaker pauses shaded) and its
dead-letter queue.`,
		Example: "  runner report resize-20261122-101500-a1b2c3 -o report.html",
		Args:    exactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			return runReport(g, args[0], out)
		},
	}
	outFileFlag(c, &out, "write to this file (default: stdout)")
	return takesJob(g, c)
}

func runReport(g *globalOptions, jobID, out string) error {
	j, err := g.store().Open(jobID)
	if err != nil {
		return err
	}
	settleCounts(g, &j.Meta)
	events, err := eventlog.Read(j.EventsPath(), eventlog.Query{})
	if err != nil {
		return err
	}
	var dead []dlq.Item
	if _, err := os.Stat(j.Path(jobdlq.File)); err == nil {
		if dead, err = dlqItems(g, jobID, "", 0); err != nil {
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
	if err := report.WriteHTML(w, j.Meta, events, dead); err != nil {
		return err
	}
	if out != "" {
		fmt.Fprintf(g.stderr, "wrote %s\n", out)
	}
	return nil
}
