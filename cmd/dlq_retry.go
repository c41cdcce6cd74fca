package cmd

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/spf13/cobra"

	"github.com/runnerdev/runner/dlq"
	"github.com/runnerdev/runner/internal/itemtask"
	"github.com/runnerdev/runner/internal/job"
	"github.com/runnerdev/runner/internal/jobdlq"
	"github.com/runnerdev/runner/internal/jsonvalue"
	"github.com/runnerdev/runner/mapreduce"
	"github.com/runnerdev/runner/retryv2"
	"github.com/runnerdev/runner/workflow"
)

type dlqRetryOptions struct {
	outputOptions
	parallelOptions
	Filter string
	DryRun bool
	Set    []string
	JUnit  string
	// MaxRetries is how many times each item runs at most in this retry
	// (Prodigy's --max-retries): an item that fails runs again, after a
	// pause, until it succeeds or has run that many times.
	MaxRetries int
	// Workflow is --workflow FILE: the items run with this file's agent
	// template, which becomes the job's copy when it fits what the job
	// has done (resume --workflow's rules), also once the job completed.
	Workflow string
	// Force is --force: also the items that are not eligible
	// (mapreduce.Unretryable).
	Force bool
	holdOptions
}

func (o *dlqRetryOptions) AddFlags(c *cobra.Command) {
	o.outputOptions.AddFlags(c)
	o.parallelOptions.AddFlags(c)
	f := c.Flags()
	f.StringVar(&o.Filter, "filter", "", "only items for which this expression is true")
	f.BoolVar(&o.DryRun, "dry-run", false, "list the items that would be retried, run nothing")
	f.StringArrayVar(&o.Set, "set", nil, "give a secret again: --set KEY=VALUE")
	f.StringVar(&o.JUnit, "junit", "", "write a JUnit XML report of the job as it stands after the retry to this file")
	o.MaxRetries = 1
	f.Var((*positiveInt)(&o.MaxRetries), "max-retries", "run each item up to N times in this retry: one that fails again runs again after a pause (2s, 4s, ...) until it succeeds")
	f.Var((*positiveInt)(&o.MaxParallel), "parallel", "Prodigy's spelling of --max-parallel")
	f.MarkHidden("parallel")
	f.StringVar(&o.Workflow, "workflow", "", "run the items with this workflow file (fixed) instead of the job's stored copy, when it fits what the job has done, as resume --workflow; also for a completed job")
	f.BoolVar(&o.Force, "force", false, "also retry the items that are not eligible: those whose last failure is at a step with retryable: false")
	o.holdOptions.AddFlags(f)
}

func newDLQRetryCommand(g *globalOptions) *cobra.Command {
	var o dlqRetryOptions
	c := &cobra.Command{
		Use:   "retry JOB",
		Short: "Re-run the job's agent template on its DLQ items",
		Long: `Re-run the job's agent template (from the workflow copy stored with the
job, with its variables and setup captures) on the items in its DLQ. An item
that succeeds leaves the DLQ; one that fails again gets the failure added to
its history and stays. Items a killed retry ran to success leave the DLQ
first, without running again. A retry holds the job's DLQ until it ends:
when another process holds it (another retry, a purge), it fails at once
with exit code 1, naming that process, unless --wait gives it time. Exit
code 0 when the DLQ is empty afterwards, 3 when items remain.

--max-retries N runs an item that fails again up to N times in all, with a
pause between two runs (2s, then 4s, doubling, as Prodigy's reprocessor).
--workflow FILE runs the items with a fixed file (its agent template, a
timeout...), which becomes the job's copy, under resume --workflow's rules:
finished steps of setup and reduce stay as they ran. It works on a
completed job too; the retry then holds the job alone. An item whose last
failure is at a step with retryable: false is not eligible: it is passed
over, and stays in the DLQ, unless --force.`,
		Example: `  runner dlq retry resize-20261122-101500-a1b2c3
  runner dlq retry resize-20261122-101500-a1b2c3 --filter 'kind == "timeout"' --max-parallel 2
  runner dlq retry resize-20261122-101500-a1b2c3 --max-retries 3
  runner dlq retry resize-20261122-101500-a1b2c3 --workflow resize.yml
  runner dlq retry resize-20261122-101500-a1b2c3 --force
  runner dlq retry resize-20261122-101500-a1b2c3 --dry-run
  runner dlq retry resize-20261122-101500-a1b2c3 --junit report.xml
  runner dlq retry resize-20261122-101500-a1b2c3 --wait 10m`,
		Args: exactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			return runDLQRetry(c.Context(), g, o, args[0])
		},
	}
	o.AddFlags(c)
	return takesJob(g, c)
}

// dlqRetrySummary is the machine-readable end of `dlq retry`.
type dlqRetrySummary struct {
	JobID     string `json:"job_id"`
	Selected  int    `json:"selected"`
	Succeeded int    `json:"succeeded"`
	Failed    int    `json:"failed"`
	Skipped   int    `json:"skipped"` // claimed by another retry, or interrupted
	// NotEligible are the items passed over without --force, by id: the
	// step of their last failure.
	NotEligible map[string]string `json:"not_eligible,omitempty"`
	HeldBy      map[string]string `json:"held_by,omitempty"`
	Remaining   int               `json:"remaining"`
	ExitCode    int               `json:"exit_code"`
}

func runDLQRetry(ctx context.Context, g *globalOptions, o dlqRetryOptions, jobID string) error {
	if err := o.outputOptions.validate(); err != nil {
		return err
	}
	if err := o.parallelOptions.validate(); err != nil {
		return err
	}
	if err := o.holdOptions.validate(); err != nil {
		return err
	}
	if _, err := compileItemFilter(o.Filter); err != nil {
		return err // before the job is attached
	}
	vars, err := parseSet(o.Set)
	if err != nil {
		return err
	}
	if o.DryRun {
		return dlqRetryDryRun(g, jobID, o)
	}
	replace, err := resumeWorkflow(g, o.Workflow)
	if err != nil {
		return err
	}
	ui := newTerminal(g, o.asJSON(), o.Progress)
	j, err := job.Attach(jobID, job.Options{Context: ctx, ExitCode: exitCode, Store: g.store(), Vars: vars, Stdout: ui.commandStdout(), Stderr: ui.commandStderr(), Listener: ui.event, Replace: replace})
	if err != nil {
		return err
	}
	ui.follow(j)
	if j.Workflow().Mode != workflow.MapReduce {
		j.Close()
		return usagef("job %s is a standard workflow; it has no dead-letter queue", jobID)
	}
	if err := o.parallelOptions.connectNATS(ctx, j.Workflow(), j.Meta().Dist); err != nil {
		j.Close()
		return err
	}
	defer o.nats.close()
	q := jobdlq.Open(ctx, j.ID(), j.Layout().DLQ, g.stderr)
	if err := o.hold(q, "runner dlq retry "+jobID); err != nil {
		j.Close()
		return err
	}
	sum, read, err := retryDLQ(ctx, g, o, j, q, o.live(ui))
	if o.JUnit != "" && read {
		if jerr := writeJUnit(o.JUnit, j); jerr != nil {
			fmt.Fprintf(g.stderr, "runner: junit report: %v\n", jerr)
		}
	}
	err = errors.Join(err, q.Close())
	if cerr := j.Close(); err == nil {
		err = cerr
	}
	if !read {
		return err // interrupted or failed before it read the DLQ: nothing to sum up
	}
	if err == nil && sum.Remaining > 0 {
		err = job.ItemsInDLQ{N: sum.Remaining, Job: jobID}
	}
	sum.ExitCode = exitCode(err)
	var werr error
	if o.asJSON() {
		werr = writeJSON(g.stdout, sum)
	} else {
		ui.flushFailures()
		writeNotEligible(g, sum.NotEligible)
		for _, id := range slices.Sorted(maps.Keys(q.Held())) {
			l := q.Held()[id]
			fmt.Fprintf(g.stderr, "item %s skipped: another dlq retry (%s) holds it until %s\n", id, jobdlq.DescribeOwner(l.Owner), l.Until.Local().Format(time.DateTime))
		}
		_, werr = fmt.Fprintf(g.stderr, "dlq retry %s: %d selected, %d succeeded (removed from the DLQ), %d failed again, %d skipped; %d item(s) remain in the DLQ\n",
			jobID, sum.Selected, sum.Succeeded, sum.Failed, sum.Skipped, sum.Remaining)
		if err == nil && sum.Remaining == 0 {
			writeMergeCommand(ctx, g, jobID)
		}
	}
	if werr != nil && (err == nil || errors.As(err, new(job.ItemsInDLQ))) {
		return fmt.Errorf("dlq retry %s: summary: %w", jobID, werr)
	}
	if errors.As(err, new(job.ItemsInDLQ)) {
		return alreadyReported(err) // the summary said so
	}
	return err
}

// retryDLQ runs `dlq retry` on an attached job whose DLQ q holds
// (mapreduce.RetryDLQ), showing the items' output on live (nil: not), and
// sums it up, naming the items another retry holds; read is false when it
// ended before it read the items to retry. With --max-retries N the items
// that failed again run again, up to N runs in all.
func retryDLQ(ctx context.Context, g *globalOptions, o dlqRetryOptions, j *job.Job, q *jobdlq.Queue, live *itemtask.Live) (sum dlqRetrySummary, read bool, err error) {
	sum.JobID = j.ID()
	var again map[string]bool // the items of the last run; nil: the first
	for run := 1; run <= o.MaxRetries; run++ {
		if run > 1 && retryv2.Pause(ctx, retryPause(run), nil) != nil {
			break
		}
		var ran map[string]bool
		res, rerr := mapreduce.RetryDLQ(ctx, j, q, mapreduce.RetryOptions{
			MaxParallel: o.MaxParallel,
			Dispatcher:  o.dispatcher(g, j, live),
			Hard:        o.Hard,
			Select: func() ([]*mapreduce.Item, error) {
				read = true
				var selected []dlq.Item
				err := q.View(func(d *dlq.DB) (err error) {
					selected, err = listItems(d, o.Filter, 0)
					return err
				})
				selected, passed := eligible(j.Workflow(), selected, o.Force)
				if run == 1 {
					sum.NotEligible = passed
				}
				items := make([]*mapreduce.Item, 0, len(selected))
				ran = map[string]bool{}
				for _, it := range selected {
					if again != nil && !again[it.ItemID] {
						continue
					}
					ran[it.ItemID] = true
					v, _ := jsonvalue.Decode(it.Item)
					items = append(items, &mapreduce.Item{Index: it.ItemIndex, ID: it.ItemID, Raw: it.Item, Value: v})
				}
				return items, err
			},
		})
		if rerr == nil { // settled with the item log as it is now
			rerr = q.MarkSettled(j.Layout().ItemStates, j.UpdateMeta)
		}
		if run == 1 {
			sum.Selected = res.Selected
		}
		sum.Succeeded += res.Succeeded
		sum.Failed, sum.Skipped, sum.Remaining = res.Failed, res.Skipped, res.Remaining
		if err = rerr; err != nil || res.Failed == 0 {
			break
		}
		again = ran
	}
	if len(q.Held()) > 0 {
		sum.HeldBy = map[string]string{}
		for id, l := range q.Held() {
			sum.HeldBy[id] = l.Owner
		}
	}
	return sum, read, err
}

// retryPause is the pause before the run-th run of --max-retries, as
// Prodigy's reprocessor waits: 2s before the second, doubling after.
func retryPause(run int) time.Duration {
	return time.Second << min(run-1, 10)
}

// eligible splits the selected items into those `dlq retry` runs and
// those it passes over, by id with the step of their last failure: an
// item whose last failure is at a step of wf's template that says
// retryable: false, unless force.
func eligible(wf *workflow.Workflow, selected []dlq.Item, force bool) ([]dlq.Item, map[string]string) {
	if force {
		return selected, nil
	}
	var run []dlq.Item
	passed := map[string]string{}
	for _, it := range selected {
		if n := len(it.Failures); n > 0 && mapreduce.Unretryable(wf, it.Failures[n-1].Step) {
			passed[it.ItemID] = it.Failures[n-1].Step
			continue
		}
		run = append(run, it)
	}
	return run, passed
}

// writeNotEligible names the items a retry passed over, and how to run
// them.
func writeNotEligible(g *globalOptions, passed map[string]string) {
	for _, id := range slices.Sorted(maps.Keys(passed)) {
		fmt.Fprintf(g.stderr, "item %s not eligible: its last failure is at step %q, which has retryable: false (--force retries it)\n", id, passed[id])
	}
}

// dlqRetryPlan is the document of `dlq retry --dry-run --output json`.
type dlqRetryPlan struct {
	JobID       string            `json:"job_id"`
	Selected    int               `json:"selected"`
	Items       []dlq.Item        `json:"items"`
	NotEligible map[string]string `json:"not_eligible,omitempty"`
}

// dlqRetryDryRun lists the DLQ items `dlq retry` would run, as lines of
// item id and item or as one JSON document, and runs nothing. The items
// are judged eligible by the workflow the retry would run: --workflow's
// file, else the job's copy.
func dlqRetryDryRun(g *globalOptions, jobID string, o dlqRetryOptions) error {
	st, d, err := openDLQ(g, jobID)
	if err != nil {
		return err
	}
	selected, err := listItems(d, o.Filter, 0)
	d.Close()
	if err != nil {
		return err
	}
	wf, err := workflow.Load(cmp.Or(o.Workflow, st.WorkflowCopy()))
	if err != nil {
		return err
	}
	selected, passed := eligible(wf, selected, o.Force)
	if o.asJSON() {
		err = writeJSON(g.stdout, dlqRetryPlan{JobID: jobID, Selected: len(selected), Items: append([]dlq.Item{}, selected...), NotEligible: passed})
	} else {
		var b bytes.Buffer
		for _, it := range selected {
			fmt.Fprintf(&b, "%s\t%s\n", it.ItemID, it.Item)
		}
		_, err = g.stdout.Write(b.Bytes())
		writeNotEligible(g, passed)
	}
	if err != nil {
		return fmt.Errorf("dlq retry %s: %w", jobID, err)
	}
	fmt.Fprintf(g.stderr, "%d item(s) would be retried; nothing was run\n", len(selected))
	return nil
}
