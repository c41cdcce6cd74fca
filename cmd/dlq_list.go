package cmd

import (
	"errors"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/runnerdev/runner/dlq"
	"github.com/runnerdev/runner/internal/jobdlq"
	"github.com/runnerdev/runner/internal/printable"
	"github.com/runnerdev/runner/internal/spool"
	"github.com/runnerdev/runner/retryv2"
)

type dlqListOptions struct {
	JSON   bool
	Filter string
	Limit  int
}

func newDLQListCommand(g *globalOptions) *cobra.Command {
	var o dlqListOptions
	c := &cobra.Command{
		Use:   "list [JOB]",
		Short: "List jobs with DLQ items, or a job's DLQ items",
		Example: `  runner dlq list
  runner dlq list resize-20261122-101500-a1b2c3
  runner dlq list resize-20261122-101500-a1b2c3 --filter 'step == "upload"' --json`,
		Args: func(c *cobra.Command, args []string) error {
			if len(args) > 1 {
				return usagef("dlq list takes at most one job id")
			}
			return nil
		},
		RunE: func(_ *cobra.Command, args []string) error {
			if len(args) == 0 {
				return runDLQJobs(g, o)
			}
			return runDLQList(g, o, args[0])
		},
	}
	f := c.Flags()
	f.BoolVar(&o.JSON, "json", false, "print a JSON array")
	f.StringVar(&o.Filter, "filter", "", "only items for which this expression is true")
	f.IntVar(&o.Limit, "limit", 0, "at most this many items (0: all)")
	return takesJob(g, c)
}

// dlqJob is one line of `dlq list` without a job.
type dlqJob struct {
	JobID       string    `json:"job_id"`
	Workflow    string    `json:"workflow"`
	Items       int       `json:"items"`
	LastFailure time.Time `json:"last_failure"`
}

func runDLQJobs(g *globalOptions, o dlqListOptions) error {
	if o.Filter != "" || o.Limit != 0 {
		return usagef("--filter and --limit need a job id")
	}
	jobs, err := g.store().List()
	if err != nil {
		return err
	}
	out := []dlqJob{}
	for _, m := range jobs {
		j, err := g.store().Open(m.ID)
		if err != nil {
			continue // listed as damaged by `runner jobs`
		}
		if _, err := os.Stat(j.Layout().DLQ); errors.Is(err, os.ErrNotExist) {
			continue
		}
		d, err := jobdlq.OpenReader(j.Layout().DLQ)
		if err != nil {
			return err
		}
		s, err := d.Summary()
		d.Close()
		if err != nil {
			return err
		}
		if s.Items > 0 {
			out = append(out, dlqJob{JobID: m.ID, Workflow: m.Workflow, Items: s.Items, LastFailure: s.LastFailure})
		}
	}
	if o.JSON {
		return writeJSON(g.stdout, out)
	}
	if len(out) == 0 {
		fmt.Fprintln(g.stderr, "no job has items in its dead-letter queue")
		return nil
	}
	t := newTable(g.stdout)
	t.row("JOB", "WORKFLOW", "ITEMS", "LAST FAILURE")
	for _, r := range out {
		t.row(r.JobID, r.Workflow, r.Items, r.LastFailure.Local().Format(time.DateTime))
	}
	return t.flush()
}

// runDLQList lists a job's DLQ items, made while the DLQ is open into a
// spool (the table's, or one of its own for JSON) and written once it is
// closed: neither its memory nor the time the DLQ stays open grows with
// how fast runner's output is read.
func runDLQList(g *globalOptions, o dlqListOptions, jobID string) error {
	match, err := compileItemFilter(o.Filter)
	if err != nil {
		return err
	}
	_, d, err := openDLQ(g, jobID)
	if err != nil {
		return err
	}
	if o.JSON {
		var out spool.Spool
		defer out.Close()
		a := dlq.NewArrayWriter(&out)
		_, err := eachItem(d, match, o.Limit, a.Write)
		d.Close()
		if err == nil {
			err = a.Close()
		}
		if err == nil {
			_, err = out.WriteTo(g.stdout)
		}
		return err
	}
	t := newTable(g.stdout)
	t.row("ITEM", "FAILURES", "LAST FAILURE", "KIND", "STEP", "ERROR")
	n, err := eachItem(d, match, o.Limit, func(it dlq.Item) error {
		last := it.Failures[len(it.Failures)-1]
		t.row(it.ItemID, it.FailureCount, it.LastFailure.Local().Format(time.DateTime),
			failureKind(last), last.Step, printable.FirstLine(ownWords(last), 80))
		return nil
	})
	d.Close()
	switch {
	case err != nil:
		t.rows.Close()
		return err
	case n == 0:
		t.rows.Close()
		return reportNoItems(g, jobID, o.Filter)
	}
	return t.flush()
}

// failureKind is a failure's KIND column: its kind, with the exit code
// for an exit ("exit 65"), as `runner events` words it.
func failureKind(f dlq.Failure) string {
	if f.Kind == retryv2.KindExit {
		return fmt.Sprintf("%s %d", f.Kind, f.ExitCode)
	}
	return f.Kind
}

// stepFailed matches what runner puts before a failed step's own error:
// `step "NAME" failed: `, `step "NAME" failed after N attempts (REASON): `
// or `step "NAME": `.
var stepFailed = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^step "(?:[^"\\]|\\.)*"(?: failed(?: after \d+ attempts? \([^)]*\))?)?: `)
})

// ownWords is a failure's ERROR column: its message without what the
// KIND and STEP columns say already (the step that failed, its attempts,
// "exit status N"), leaving the command's own words, or "(no output)"
// when the command printed nothing.
func ownWords(f dlq.Failure) string {
	msg := stepFailed().ReplaceAllString(f.Message, "")
	if f.Kind == retryv2.KindExit {
		status := "exit status " + strconv.Itoa(f.ExitCode)
		if msg == status {
			return "(no output)"
		}
		msg = strings.TrimPrefix(msg, status+": ")
	}
	return msg
}

// reportNoItems says why `dlq list JOB` shows nothing: the queue is
// empty, or none of its items match the filter.
func reportNoItems(g *globalOptions, jobID, filter string) error {
	_, d, err := openDLQ(g, jobID)
	if err != nil {
		return err
	}
	defer d.Close()
	n, err := d.Count()
	if err != nil {
		return err
	}
	if n > 0 && filter != "" {
		fmt.Fprintf(g.stderr, "none of the %d item(s) in job %s's dead-letter queue match --filter %q\n", n, jobID, filter)
	} else {
		fmt.Fprintf(g.stderr, "job %s has no items in its dead-letter queue\n", jobID)
	}
	return nil
}
