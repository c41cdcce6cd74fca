package cmd

import (
	"encoding/json"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/runnerdev/runner/state"
)

type jobsOptions struct {
	JSON bool
}

func newJobsCommand(g *globalOptions) *cobra.Command {
	var o jobsOptions
	c := &cobra.Command{
		Use:     "jobs",
		Short:   "List jobs in the state dir",
		Example: "  runner jobs\n  runner jobs --json | jq '.[] | select(.status == \"failed\")'",
		Args:    exactArgs(0),
		RunE: func(*cobra.Command, []string) error {
			return runJobs(g, o)
		},
	}
	c.Flags().BoolVar(&o.JSON, "json", false, "print a JSON array")
	return c
}

func runJobs(g *globalOptions, o jobsOptions) error {
	jobs, err := g.store().List()
	if err != nil {
		return err
	}
	if o.JSON {
		if jobs == nil {
			jobs = []state.Meta{}
		}
		enc := json.NewEncoder(g.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(jobs)
	}
	if len(jobs) == 0 {
		fmt.Fprintln(g.stderr, "no jobs in", g.store().Dir)
		return nil
	}
	tw := tabwriter.NewWriter(g.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "JOB\tWORKFLOW\tSTATUS\tPROGRESS\tSTARTED\tDURATION")
	for _, m := range jobs {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", m.ID, m.Workflow, jobStatus(m), jobProgress(m),
			m.Started.Local().Format("2006-01-02 15:04:05"), duration(m))
	}
	return tw.Flush()
}

// jobStatus is the status column: a job whose process died is said to be
// resumable, since nothing recorded its end.
func jobStatus(m state.Meta) string {
	if m.OwnerDied {
		return string(m.Status) + " (resumable)"
	}
	return string(m.Status)
}

func jobProgress(m state.Meta) string {
	if m.Items != nil {
		return fmt.Sprintf("%d/%d items", m.Items.Succeeded, m.Items.Total)
	}
	return fmt.Sprintf("%d/%d steps", m.StepsDone, m.Steps)
}

func duration(m state.Meta) string {
	end := m.Finished
	if end.IsZero() {
		if m.Status != state.Running {
			return "-"
		}
		end = time.Now()
	}
	return end.Sub(m.Started).Round(time.Millisecond).String()
}
