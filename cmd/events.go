package cmd

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/runnerdev/runner/eventlog"
	"github.com/runnerdev/runner/state"
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
	return c
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
		err := eventlog.Follow(ctx, j.EventsPath(), o.query(), func(e eventlog.Event) error {
			return printEvent(g, o.JSON, e)
		}, eventlog.Until{See: w.see, Done: w.done})
		if err == nil && w.gone {
			fmt.Fprintf(g.stderr, "job %s: the process running it is gone; resume with: runner resume %s\n", id, id)
		}
		return err
	}
	if o.JSON {
		return printEventsJSON(g.stdout, j.EventsPath(), o.query())
	}
	return printEventsText(g.stdout, j.EventsPath(), o.query())
}

// runWatch tells `events --follow` when to stop: when the job's current
// run (from its last job_started or job_resumed) has ended, or when no
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
	case t == eventlog.TypeJobStarted || t == eventlog.TypeJobResumed:
		w.ended = false
	case eventlog.JobEnded(t):
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
		line = appendEventLine(line[:0], e)
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
	_, err := g.stdout.Write(appendEventLine(nil, e))
	return err
}

// appendEventLine appends an event as a line of text: its local time, its
// type (padded to 18 characters) and what it means.
func appendEventLine(b []byte, e eventlog.Event) []byte {
	b = e.Time.Local().AppendFormat(b, time.DateTime+".000")
	b = append(append(b, "  "...), e.Type...)
	for n := utf8.RuneCountInString(string(e.Type)); n < 18; n++ {
		b = append(b, ' ')
	}
	b = append(append(b, ' '), describeEvent(e)...)
	return append(b, '\n')
}

// describeEvent says what an event means in a few words; types without a
// description show their fields as key=value.
func describeEvent(e eventlog.Event) string {
	who := e.Str("step")
	if e.ItemID != "" {
		who = "item " + e.ItemID
		if step := e.Str("step"); step != "" {
			who += " " + step
		}
	}
	n := func(name string) int64 { return e.Int(name) }
	ms := func(name string) time.Duration { return time.Duration(n(name)) * time.Millisecond }
	t := eventlog.Type(e.Type)
	if eventlog.JobEnded(t) {
		s := fmt.Sprintf("%s, exit %d, after %s", e.Str("status"), n("exit_code"), ms("duration_ms"))
		if err := e.Str("error"); err != "" {
			s += ": " + err
		}
		return s
	}
	switch t {
	case eventlog.TypeJobStarted:
		return fmt.Sprintf("%s (%s) from %s, seed %v", e.Str("workflow"), e.Str("mode"), e.Str("file"), e.Fields["seed"])
	case eventlog.TypeStepStarted:
		return who + ": " + firstCommandLine(e.Str("command"))
	case eventlog.TypeStepCompleted:
		return fmt.Sprintf("%s: exit %d in %s", who, n("exit_code"), ms("duration_ms"))
	case eventlog.TypeStepFailed:
		return who + ": " + e.Str("error")
	case eventlog.TypeStepSkipped:
		return who + ": " + e.Str("reason")
	case eventlog.TypeAttemptStarted:
		return fmt.Sprintf("%s: attempt %d", who, n("attempt"))
	case eventlog.TypeAttemptSucceeded:
		return fmt.Sprintf("%s: attempt %d succeeded in %s", who, n("attempt"), ms("duration_ms"))
	case eventlog.TypeAttemptFailed:
		return fmt.Sprintf("%s: attempt %d failed (%s) after %s: %s", who, n("attempt"), failureKind(e), ms("duration_ms"), e.Str("message"))
	case eventlog.TypeRetryDecision:
		return who + ": " + retryLine(e)
	case eventlog.TypeItemStarted:
		return fmt.Sprintf("%s: attempt %d", who, n("attempt"))
	case eventlog.TypeItemSucceeded:
		return fmt.Sprintf("%s in %s", who, ms("duration_ms"))
	case eventlog.TypeItemFailed:
		return fmt.Sprintf("%s (%s): %s", who, e.Str("action"), e.Str("message"))
	case eventlog.TypeItemRetrying:
		return fmt.Sprintf("%s: attempt %d failed, again in %s: %s", who, n("attempt"), ms("delay_ms"), e.Str("message"))
	case eventlog.TypeItemSkipped, eventlog.TypeDLQAdded, eventlog.TypeDLQRemoved:
		return strings.TrimSpace(who + " " + e.Str("reason"))
	case eventlog.TypeThresholdReached:
		return e.Str("rule") + ": " + e.Str("reason")
	case eventlog.TypeCircuitOpened, eventlog.TypeCircuitHalfOpen, eventlog.TypeCircuitClosed:
		return strings.TrimSpace(e.Str("scope") + " " + who)
	}
	keys := make([]string, 0, len(e.Fields))
	for k := range e.Fields {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		v, _ := json.Marshal(e.Fields[k])
		parts = append(parts, k+"="+string(v))
	}
	return strings.Join(parts, " ")
}
