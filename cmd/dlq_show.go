package cmd

import (
	"fmt"
	"strings"
	"time"

	"github.com/runnerdev/runner/internal/printable"
	"github.com/spf13/cobra"
)

func newDLQShowCommand(g *globalOptions) *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:     "show JOB ITEM",
		Short:   "Show one DLQ item with its whole failure history",
		Example: "  runner dlq show resize-20261122-101500-a1b2c3 item_42\n  runner dlq show --json resize-20261122-101500-a1b2c3 item_42 | jq .failures",
		Args:    exactArgs(2),
		RunE: func(_ *cobra.Command, args []string) error {
			return runDLQShow(g, args[0], args[1], asJSON)
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print the item as JSON")
	return takesJob(g, c)
}

func runDLQShow(g *globalOptions, jobID, itemID string, asJSON bool) error {
	_, d, err := openDLQ(g, jobID)
	if err != nil {
		return err
	}
	it, err := d.Get(itemID)
	d.Close()
	if err != nil {
		return err
	}
	if asJSON {
		return writeJSON(g.stdout, it)
	}
	w := g.stdout
	fmt.Fprintf(w, "item:            %s (index %d) of job %s\n", printable.Line(it.ItemID), it.ItemIndex, it.JobID)
	fmt.Fprintf(w, "value:           %s\n", printable.Line(string(it.Item)))
	fmt.Fprintf(w, "failures:        %d, first %s, last %s\n", it.FailureCount,
		it.FirstFailure.Local().Format(time.DateTime), it.LastFailure.Local().Format(time.DateTime))
	fmt.Fprintf(w, "error signature: %s\n", printable.Line(it.ErrorSignature))
	for _, f := range it.Failures {
		fmt.Fprintf(w, "\nattempt %d at %s: %s, exit %d, step %s, %s\n", f.Attempt, f.At.Local().Format(time.DateTime+".000"),
			f.Kind, f.ExitCode, printable.Line(f.Step), time.Duration(f.DurationMS)*time.Millisecond)
		fmt.Fprintf(w, "  %s\n", strings.ReplaceAll(printable.Text(f.Message), "\n", "\n  "))
		if tail := strings.TrimRight(f.StderrTail, "\n"); tail != "" {
			fmt.Fprintf(w, "  stderr:\n    %s\n", strings.ReplaceAll(printable.Text(tail), "\n", "\n    "))
		}
	}
	return nil
}
