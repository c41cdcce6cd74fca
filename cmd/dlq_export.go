package cmd

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/runnerdev/runner/dlq"
	"github.com/runnerdev/runner/internal/spool"
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

// runDLQExport writes a job's DLQ items, made while the DLQ is open into
// a spool and written once it is closed, as dlq list does: its memory
// does not grow with the items.
func runDLQExport(g *globalOptions, o dlqExportOptions, jobID string) error {
	var out spool.Spool
	defer out.Close()
	ew, ok := dlq.NewExportWriter(&out, o.Format)
	if !ok {
		return usagef("--format must be %s or %s, not %q", dlq.FormatJSON, dlq.FormatJSONL, o.Format)
	}
	n, err := eachJobItem(g, jobID, ew.Write)
	if err == nil {
		err = ew.Close()
	}
	if err != nil {
		return err
	}
	if o.Output == "" {
		_, err = out.WriteTo(g.stdout)
		return err
	}
	f, err := os.OpenFile(o.Output, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	if _, err := out.WriteTo(f); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	fmt.Fprintf(g.stderr, "wrote %d item(s) to %s\n", n, o.Output)
	return nil
}
