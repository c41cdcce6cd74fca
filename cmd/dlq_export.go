package cmd

import (
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/runnerdev/runner/dlq"
)

type dlqExportOptions struct {
	Format string
	Output string
}

func newDLQExportCommand(g *globalOptions) *cobra.Command {
	var o dlqExportOptions
	c := &cobra.Command{
		Use:   "export JOB",
		Short: "Write a job's DLQ items as JSON or JSON Lines",
		Example: `  runner dlq export resize-20261122-101500-a1b2c3 > failed.json
  runner dlq export resize-20261122-101500-a1b2c3 --format jsonl -o failed.jsonl`,
		Args: exactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			return runDLQExport(g, o, args[0])
		},
	}
	f := c.Flags()
	f.StringVar(&o.Format, "format", "json", "json (one array) or jsonl (one item per line)")
	outFileFlag(c, &o.Output, "write to this file instead of stdout")
	return takesJob(g, c)
}

func runDLQExport(g *globalOptions, o dlqExportOptions, jobID string) error {
	write := map[string]func(io.Writer, []dlq.Item) error{"json": dlq.WriteJSON, "jsonl": dlq.WriteJSONL}[o.Format]
	if write == nil {
		return usagef("--format must be json or jsonl, not %q", o.Format)
	}
	items, err := dlqItems(g, jobID, "", 0)
	if err != nil {
		return err
	}
	if o.Output == "" {
		return write(g.stdout, items)
	}
	f, err := os.OpenFile(o.Output, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	if err := write(f, items); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	fmt.Fprintf(g.stderr, "wrote %d item(s) to %s\n", len(items), o.Output)
	return nil
}
