package cmd

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/runnerdev/runner/dlq"
	"github.com/runnerdev/runner/internal/jobdlq"
	"github.com/runnerdev/runner/internal/state"
)

func newDLQCommand(g *globalOptions) *cobra.Command {
	c := &cobra.Command{
		Use:   "dlq",
		Short: "Inspect and re-run items in a job's dead-letter queue",
		Long: `Items of a MapReduce job that still failed after their retries are kept in
the job's dead-letter queue (DLQ), each with its original JSON and its whole
failure history. These commands list, inspect, re-run, export and purge them.

--filter takes an expression (expr-lang syntax) over an item with the fields
item (the original item), item_id, item_index, failure_count,
error_signature, and the last failure's kind, exit_code, step, message.`,
		Example: `  runner dlq list
  runner dlq list resize-20261122-101500-a1b2c3 --filter 'exit_code == 7'
  runner dlq show resize-20261122-101500-a1b2c3 item_42
  runner dlq retry resize-20261122-101500-a1b2c3 --max-parallel 2
  runner dlq stats --json`,
		Args: cobra.ArbitraryArgs,
		RunE: commandGroup,
	}
	for _, sub := range []*cobra.Command{
		newDLQListCommand(g),
		prodigyAlias(newDLQShowCommand(g), "inspect"),
		newDLQRetryCommand(g),
		prodigyAlias(newDLQStatsCommand(g), "analyze"),
		newDLQExportCommand(g),
		prodigyAlias(newDLQPurgeCommand(g), "clear"),
	} {
		c.AddCommand(withJobIDFlag(sub))
	}
	return c
}

// prodigyAlias lets a dlq command answer to Prodigy's name for it too.
func prodigyAlias(c *cobra.Command, name string) *cobra.Command {
	c.Aliases = append(c.Aliases, name)
	return c
}

// withJobIDFlag lets a dlq command, whose first argument is the job,
// take the job as --job-id JOB, Prodigy's spelling (prodigy dlq inspect
// ITEM --job-id JOB): the flag's value goes before the arguments, unless
// the first argument is that job already.
func withJobIDFlag(c *cobra.Command) *cobra.Command {
	var id string
	c.Flags().StringVar(&id, "job-id", "", "the job, as the JOB argument (Prodigy's spelling)")
	withID := func(args []string) []string {
		if id == "" || len(args) > 0 && args[0] == id {
			return args
		}
		return append([]string{id}, args...)
	}
	check, run := c.Args, c.RunE
	c.Args = func(c *cobra.Command, args []string) error { return check(c, withID(args)) }
	c.RunE = func(c *cobra.Command, args []string) error { return run(c, withID(args)) }
	return c
}

// holdOptions is --wait of the commands that hold a job's DLQ (retry,
// purge) for another process that holds it.
type holdOptions struct {
	Wait time.Duration
}

func (o *holdOptions) AddFlags(f *pflag.FlagSet) {
	f.DurationVar(&o.Wait, "wait", 0, "wait up to this long for another process that holds the job's DLQ (default: fail at once, naming it)")
}

func (o holdOptions) validate() error {
	if o.Wait < 0 {
		return usagef("--wait %s: a duration of 0 or more, like 30s or 10m", o.Wait)
	}
	return nil
}

// hold holds a job's DLQ for command (jobdlq.Queue.Hold); the error of a
// DLQ another process holds says how to go on.
func (o holdOptions) hold(q *jobdlq.Queue, command string) error {
	err := q.Hold(command, o.Wait)
	if errors.As(err, new(*jobdlq.HeldError)) {
		return fmt.Errorf("%w; run again once it ends, or give --wait DURATION", err)
	}
	return err
}

// openDLQ opens a job's queue for reading; a job without failures has an
// empty queue.
func openDLQ(g *globalOptions, jobID string) (*state.Job, *dlq.DB, error) {
	j, err := g.store().Open(jobID)
	if err != nil {
		return nil, nil, err
	}
	d, err := jobdlq.OpenReader(j.Layout().DLQ)
	if err != nil {
		return nil, nil, err
	}
	return j, d, nil
}

// eachJobItem calls fn with each item of a job's queue, in the queue's
// order, while it is open (see eachItem), and returns how many.
func eachJobItem(g *globalOptions, jobID string, fn func(dlq.Item) error) (int, error) {
	_, d, err := openDLQ(g, jobID)
	if err != nil {
		return 0, err
	}
	defer d.Close()
	return eachItem(d, dlq.All, 0, fn)
}

// dlqItems returns a job's queued items that match filter, at most limit
// (0: all).
func dlqItems(g *globalOptions, jobID, filter string, limit int) ([]dlq.Item, error) {
	if _, err := compileItemFilter(filter); err != nil {
		return nil, err
	}
	_, d, err := openDLQ(g, jobID)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	return listItems(d, filter, limit)
}

// listItems returns the items of an open queue that match filter, at most
// limit (0: all).
func listItems(d *dlq.DB, filter string, limit int) ([]dlq.Item, error) {
	match, err := compileItemFilter(filter)
	if err != nil {
		return nil, err
	}
	var items []dlq.Item
	_, err = eachItem(d, match, limit, func(it dlq.Item) error { items = append(items, it); return nil })
	return items, err
}

// eachItem calls fn with each item of an open queue that match takes, at
// most limit (0: all), in the queue's order, and returns how many it
// called fn with. fn runs while the queue is read: it must not wait (on
// runner's output, say).
func eachItem(d *dlq.DB, match dlq.Filter, limit int, fn func(dlq.Item) error) (int, error) {
	var (
		n     int
		fnErr error
	)
	err := d.List(func(it dlq.Item) bool {
		ok, err := match(it)
		if err == nil && ok {
			n++
			err = fn(it)
		}
		if err != nil {
			fnErr = err
			return false
		}
		return limit <= 0 || n < limit
	})
	if err == nil {
		err = fnErr
	}
	return n, err
}

// compileItemFilter compiles a --filter expression (dlq.CompileFilter);
// its errors name the flag.
func compileItemFilter(src string) (dlq.Filter, error) {
	f, err := dlq.CompileFilter(src)
	if err != nil {
		return nil, usagef("--filter %q: %v", src, err)
	}
	return func(it dlq.Item) (bool, error) {
		ok, err := f(it)
		if err != nil {
			return false, fmt.Errorf("--filter %q on item %s: %v", src, it.ItemID, err)
		}
		return ok, nil
	}, nil
}

// writeJSON writes v as one indented JSON document.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
