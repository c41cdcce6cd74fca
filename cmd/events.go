package cmd

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/runnerdev/runner/internal/eventlog"
	"github.com/runnerdev/runner/internal/state"
)

type eventsOptions struct {
	JSON   bool
	Follow bool
	Type   []string
	Item   string
}

func newEventsCommand(g *globalOptions) *cobra.Command {
	var o eventsOptions
	c := &cobra.Command{
		Use:   "events JOB",
		Short: "Show a job's event log",
		Example: `  runner events deploy-20261122-101500-a1b2c3
  runner events --follow JOB
  runner events --type retry_decision --json JOB`,
		Args: exactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			return runEvents(c.Context(), g, o, args[0])
		},
	}
	f := c.Flags()
	f.BoolVar(&o.JSON, "json", false, "print one JSON array (with --follow: one object per line)")
	f.BoolVarP(&o.Follow, "follow", "f", false, "keep printing new events until the job's current run ends or its process is gone")
	f.StringSliceVar(&o.Type, "type", nil, "only events of these types")
	f.StringVar(&o.Item, "item", "", "only events of this item")
	return takesJob(g, c)
}

func (o eventsOptions) query() eventlog.Query {
	q := eventlog.Query{Item: o.Item}
	for _, t := range o.Type {
		q.Types = append(q.Types, eventlog.Type(t))
	}
	return q
}

func (o eventsOptions) validate() error {
	for _, t := range o.Type {
		if !slices.Contains(eventlog.Types, eventlog.Type(t)) {
			names := make([]string, len(eventlog.Types))
			for i, known := range eventlog.Types {
				names[i] = string(known)
			}
			return usagef("--type %q: no such event type; the types are %s", t, strings.Join(names, ", "))
		}
	}
	return nil
}

func runEvents(ctx context.Context, g *globalOptions, o eventsOptions, id string) error {
	if err := o.validate(); err != nil {
		return err
	}
	j, err := g.store().Open(id)
	if err != nil {
		return err
	}
	if o.Follow {
		w := &runWatch{job: j}
		err := eventlog.Follow(ctx, j.Layout().Events, o.query(), func(e eventlog.Event) error {
			return printEvent(g, o.JSON, e)
		}, eventlog.Until{See: w.see, Done: w.done})
		if err == nil && w.gone {
			fmt.Fprintf(g.stderr, "job %s: the process running it is gone; resume with: runner resume %s\n", id, id)
		}
		return err
	}
	if o.JSON {
		return printEventsJSON(g.stdout, j.Layout().Events, o.query())
	}
	return printEventsText(g.stdout, j.Layout().Events, o.query())
}

// runWatch tells `events --follow` and `logs --follow` when to stop: when
// the job's current run (from its last job_started, job_resumed or
// dlq_retry_started) has ended, or when no
// process holds the job's lock and no event came since a look found it
// free. A process records a run's end before it lets go of the lock, so
// that look cannot miss an end that is on its way.
type runWatch struct {
	job   *state.Job
	ended bool // the last run in the log has ended
	fresh bool // events came since the last look at the lock
	free  bool // the last look found the lock free
	gone  bool // stopped because the run's process is gone
}

func (w *runWatch) see(e eventlog.Event) {
	switch t := eventlog.Type(e.Type); {
	case t == eventlog.TypeJobStarted || t == eventlog.TypeJobResumed || t == eventlog.TypeDLQRetryStarted:
		w.ended = false
	case eventlog.JobEnded(t) || t == eventlog.TypeDLQRetryFinished:
		w.ended = true
	}
	w.fresh = true
}

func (w *runWatch) done() (bool, error) {
	if w.ended {
		return true, nil
	}
	if w.free && !w.fresh {
		w.gone = true
		return true, nil
	}
	pid, err := w.job.Owner()
	w.free, w.fresh = pid == 0, false
	return false, err
}

// printEventsJSON writes the selected events as one JSON array, one
// object per line as the log holds them (nothing is decoded that need not
// be: a large job's log copies out at disk speed).
func printEventsJSON(w io.Writer, path string, q eventlog.Query) error {
	bw := bufio.NewWriterSize(w, 256<<10)
	sep := "[\n"
	err := eventlog.Raw(path, q, func(line []byte) error {
		bw.WriteString(sep)
		sep = ",\n"
		_, err := bw.Write(line)
		return err
	})
	if err != nil {
		return err
	}
	if sep == "[\n" {
		bw.WriteString("[]\n")
	} else {
		bw.WriteString("\n]\n")
	}
	return bw.Flush()
}

// printEventsText writes the selected events one line each, as they are
// read: a large job's log is never held whole.
func printEventsText(w io.Writer, path string, q eventlog.Query) error {
	bw := bufio.NewWriterSize(w, 256<<10)
	var line []byte
	err := eventlog.Scan(path, q, func(e eventlog.Event) error {
		line = e.AppendLine(line[:0])
		_, err := bw.Write(line)
		return err
	})
	if ferr := bw.Flush(); err == nil {
		err = ferr
	}
	return err
}

func printEvent(g *globalOptions, asJSON bool, e eventlog.Event) error {
	if asJSON {
		line, err := e.MarshalJSON()
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(g.stdout, "%s\n", line)
		return err
	}
	_, err := g.stdout.Write(e.AppendLine(nil))
	return err
}
