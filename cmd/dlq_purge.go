package cmd

import (
	"bufio"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/runnerdev/runner/dlq"
	"github.com/runnerdev/runner/workflow"
	"github.com/runnerdev/runner/workflow/state"
)

type dlqPurgeOptions struct {
	OlderThan string
	Yes       bool
}

func newDLQPurgeCommand(g *globalOptions) *cobra.Command {
	var o dlqPurgeOptions
	c := &cobra.Command{
		Use:   "purge JOB",
		Short: "Delete items from a job's DLQ",
		Long: `Delete a job's DLQ items (all, or those whose last failure is older than
--older-than). It asks first on a terminal; elsewhere it needs --yes.`,
		Example: `  runner dlq purge resize-20261122-101500-a1b2c3
  runner dlq purge resize-20261122-101500-a1b2c3 --older-than 7d --yes`,
		Args: exactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			return runDLQPurge(g, o, args[0])
		},
	}
	f := c.Flags()
	f.StringVar(&o.OlderThan, "older-than", "", "only items whose last failure is older than this (e.g. 7d, 12h)")
	f.BoolVarP(&o.Yes, "yes", "y", false, "do not ask")
	return c
}

func runDLQPurge(g *globalOptions, o dlqPurgeOptions, jobID string) error {
	var before time.Time
	if o.OlderThan != "" {
		d, err := workflow.ParseDuration(o.OlderThan)
		if err != nil {
			return usagef("--older-than: %v", err)
		}
		before = time.Now().Add(-d)
	}
	j, err := g.store().Open(jobID)
	if err != nil {
		return err
	}
	if !o.Yes {
		if !term.IsTerminal(int(os.Stdin.Fd())) {
			return usagef("dlq purge deletes items for good: pass --yes (stdin is not a terminal to ask on)")
		}
		what := "all items"
		if o.OlderThan != "" {
			what = "the items whose last failure is older than " + o.OlderThan
		}
		fmt.Fprintf(g.stderr, "Delete %s from the dead-letter queue of %s? [y/N] ", what, jobID)
		answer, _ := bufio.NewReader(os.Stdin).ReadString('\n')
		if a := strings.ToLower(strings.TrimSpace(answer)); a != "y" && a != "yes" {
			fmt.Fprintln(g.stderr, "nothing deleted")
			return nil
		}
	}
	d, err := dlq.Open(j.Path(dlqFile), dlq.Options{})
	if err != nil {
		return err
	}
	purged, err := d.Purge(before)
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if err := recordPurged(j, purged); err != nil {
		return err
	}
	fmt.Fprintf(g.stderr, "deleted %d item(s) from the dead-letter queue of %s\n", len(purged), jobID)
	return nil
}

// recordPurged marks purged items as skipped in the job's item states, so
// that every item stays exactly one of succeeded, in the DLQ, skipped or
// pending.
func recordPurged(j *state.Job, purged []dlq.Purged) error {
	if len(purged) == 0 {
		return nil
	}
	log, err := j.OpenItemLog()
	if err != nil {
		return err
	}
	for _, p := range purged {
		if err := log.Append(state.ItemRecord{Index: p.ItemIndex, ID: p.ItemID, State: state.ItemSkipped, Error: "purged from the DLQ"}); err != nil {
			log.Close()
			return err
		}
	}
	if err := log.Close(); err != nil {
		return err
	}
	return j.Update(func(m *state.Meta) {
		if m.Items != nil {
			m.Items.DLQ = max(m.Items.DLQ-len(purged), 0)
			m.Items.Skipped += len(purged)
		}
	})
}
