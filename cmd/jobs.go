package cmd

import (
	"encoding/json"
	"fmt"
	"os"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/runnerdev/runner/dlq"
	"github.com/runnerdev/runner/job"
	"github.com/runnerdev/runner/jobdlq"
	"github.com/runnerdev/runner/mapreduce"
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
	for i := range jobs {
		settleCounts(g, &jobs[i])
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

// settleCounts shows the item counts of a MapReduce job that no process
// holds as its DLQ and item log are (mapreduce.SettledCounts), rather than
// as its metadata says: a `dlq retry` killed with -9 leaves the counts of
// its start there. A job that some process holds keeps the counts that
// process keeps up to date, and one whose files cannot be read those of
// its metadata.
func settleCounts(g *globalOptions, m *state.Meta) {
	if m.Items == nil || m.Status == state.Running {
		return
	}
	j, err := g.store().Open(m.ID)
	if err != nil {
		return
	}
	if _, err := os.Stat(j.Path(jobdlq.File)); err != nil {
		return // no item ever failed
	}
	if pid, err := j.Owner(); err != nil || pid != 0 {
		return
	}
	records, err := j.ReadItemStates()
	if err != nil {
		return
	}
	d, err := jobdlq.OpenReader(j.Path(jobdlq.File))
	if err != nil {
		return
	}
	defer d.Close()
	queued := map[string]bool{}
	if err := d.List(func(it dlq.Item) bool { queued[it.ItemID] = true; return true }); err != nil {
		return
	}
	job.SetItemCounts(m, mapreduce.SettledCounts(records, queued, *m.Items))
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
