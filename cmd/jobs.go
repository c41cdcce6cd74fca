package cmd

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/runnerdev/runner/dlq"
	"github.com/runnerdev/runner/internal/dlqsettle"
	"github.com/runnerdev/runner/internal/eventlog"
	"github.com/runnerdev/runner/internal/job"
	"github.com/runnerdev/runner/internal/jobdlq"
	"github.com/runnerdev/runner/internal/state"
	"github.com/runnerdev/runner/workflow"
)

type jobsOptions struct {
	JSON   bool
	Status []string
	Limit  int
}

func newJobsCommand(g *globalOptions) *cobra.Command {
	var o jobsOptions
	c := &cobra.Command{
		Use:   "jobs",
		Short: "List jobs in the state dir; remove them (rm, prune)",
		Example: `  runner jobs
  runner jobs --status failed --limit 5
  runner jobs --json | jq '.[] | select(.status == "failed")'
  runner jobs rm deploy-20261122-101500-a1b2c3
  runner jobs prune --older-than 30d --dry-run`,
		Args: cobra.ArbitraryArgs,
		RunE: func(c *cobra.Command, args []string) error {
			if len(args) > 0 {
				return commandGroup(c, args)
			}
			return runJobs(g, o)
		},
	}
	c.Flags().BoolVar(&o.JSON, "json", false, "print a JSON array")
	c.Flags().StringSliceVar(&o.Status, "status", nil, "only jobs of these statuses ("+strings.Join(jobStatuses, ", ")+")")
	c.Flags().IntVarP(&o.Limit, "limit", "n", 0, "only the newest N jobs (after --status)")
	c.AddCommand(newJobsRmCommand(g), newJobsPruneCommand(g))
	return c
}

func runJobs(g *globalOptions, o jobsOptions) error {
	statuses, err := statusSet(o.Status)
	if err != nil {
		return err
	}
	if o.Limit < 0 {
		return usagef("--limit %d: give a number of jobs, 1 or more (0 lists all)", o.Limit)
	}
	all, err := g.store().List()
	if err != nil {
		return err
	}
	jobs := newest(withStatus(all, statuses), o.Limit)
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
		if len(all) > 0 {
			fmt.Fprintln(g.stderr, "no jobs of status", strings.Join(o.Status, ", "), "in", g.store().Dir)
		} else {
			fmt.Fprintln(g.stderr, "no jobs in", g.store().Dir)
		}
		return nil
	}
	t := newTable(g.stdout)
	t.row("JOB", "WORKFLOW", "STATUS", "PROGRESS", "STARTED", "RUNS", "RAN", "WALL CLOCK", "COST")
	for _, m := range jobs {
		t.row(m.ID, m.Workflow, jobStatus(m), jobProgress(m),
			m.Started.Local().Format("2006-01-02 15:04:05"), m.ResumedCount+1, ran(m), wallClock(m), cost(m))
	}
	return t.flush()
}

// settleCounts shows the item counts of a MapReduce job that no process
// holds as its DLQ and item log are, rather than as its metadata says: a
// `dlq retry` killed with -9 leaves the counts of its start there. Its
// metadata's counts are shown as they are while the stamp beside them
// (state.ItemsSettled) says that neither file changed since they were
// written
// (jobdlq.CountsCurrent: the DLQ's summary and a stat); otherwise they
// are settled from both files (dlqsettle.SettledCounts), for this listing
// only. A job that some process holds keeps the counts that process
// keeps up to date, and one whose files cannot be read those of its
// metadata.
func settleCounts(g *globalOptions, m *state.Meta) {
	if m.Items == nil || m.Status == state.Running {
		return
	}
	j, err := g.store().Open(m.ID)
	if err != nil {
		return
	}
	if _, err := os.Stat(j.Layout().DLQ); err != nil {
		return // no item ever failed
	}
	if pid, err := j.Owner(); err != nil || pid != 0 {
		return
	}
	d, err := jobdlq.OpenReader(j.Layout().DLQ)
	if err != nil {
		return
	}
	defer d.Close()
	if s, err := d.Summary(); err != nil || jobdlq.CountsCurrent(*m, s, j.Layout().ItemStates) {
		return
	}
	states, err := j.LoadItemStates()
	if err != nil {
		return
	}
	counts, err := dlqsettle.SettledCounts(states, dbLister{d}, *m.Items)
	if err != nil {
		return
	}
	job.SetItemCounts(m, counts, exitCode)
}

// dbLister lists the items of a DLQ open for reading (dlqsettle.Lister).
type dbLister struct{ d *dlq.DB }

func (l dbLister) Each(fn func(itemID string, index int)) error {
	return l.d.List(func(it dlq.Item) bool { fn(it.ItemID, it.ItemIndex); return true })
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

// cost is the COST column: what the job's agents spent; "-" when none
// reported it.
func cost(m state.Meta) string {
	if m.Spend == nil {
		return "-"
	}
	return eventlog.CostText(m.Spend.CostUSD)
}

// ran is the RAN column: the time the job's ended runs took, its pauses
// between runs left out; "-" when no run ended that recorded it.
func ran(m state.Meta) string {
	switch {
	case m.RanMS > 0:
		return ms(m.RanMS).String()
	case m.ResumedCount == 0 && !m.Finished.IsZero():
		return wallClock(m) // one run, recorded before runner kept the sum
	}
	return "-"
}

// wallClock is the WALL CLOCK column: the time from the job's start to
// its end (now while it runs), the pauses between its runs included.
func wallClock(m state.Meta) string {
	end := m.Finished
	if end.IsZero() {
		if m.Status != state.Running {
			return "-"
		}
		end = time.Now()
	}
	return end.Sub(m.Started).Round(time.Millisecond).String()
}

// jobStatuses are the statuses --status takes.
var jobStatuses = []string{
	string(state.Running), string(state.Completed), string(state.Failed), string(state.Stopped), string(state.Interrupted),
}

// statusSet reads --status: the statuses named (nil when none is), each
// one of jobStatuses; a word that is not one is a usage error.
func statusSet(names []string) (map[state.Status]bool, error) {
	if len(names) == 0 {
		return nil, nil
	}
	set := map[state.Status]bool{}
	for _, n := range names {
		if !slices.Contains(jobStatuses, n) {
			msg := fmt.Sprintf("--status %q: a job's status is one of %s", n, strings.Join(jobStatuses, ", "))
			if s := workflow.Suggest(n, jobStatuses); s != "" {
				msg += fmt.Sprintf(" (did you mean %q?)", s)
			}
			return nil, usagef("%s", msg)
		}
		set[state.Status(n)] = true
	}
	return set, nil
}

// withStatus returns the jobs whose status statuses has (all of them when
// statuses is nil). A job whose process died counts as interrupted.
func withStatus(jobs []state.Meta, statuses map[state.Status]bool) []state.Meta {
	if statuses == nil {
		return jobs
	}
	var out []state.Meta
	for _, m := range jobs {
		if statuses[m.Status] {
			out = append(out, m)
		}
	}
	return out
}

// newest returns the last n of jobs (listed oldest first): the n started
// last; all of them when n is 0.
func newest(jobs []state.Meta, n int) []state.Meta {
	if n > 0 && len(jobs) > n {
		return jobs[len(jobs)-n:]
	}
	return jobs
}
