package cmd

import (
	"cmp"
	"errors"
	"fmt"
	"slices"

	"github.com/spf13/cobra"

	"github.com/runnerdev/runner/dlq"
	"github.com/runnerdev/runner/internal/printable"
)

func newDLQStatsCommand(g *globalOptions) *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "stats [JOB]",
		Short: "Count DLQ items by error signature, step and failure kind",
		Long: `Count the items in a job's DLQ (or every job's) grouped by error signature
(the last failure's message with the item's own id and value, numbers, ids,
paths and quoted strings normalised away), by the step that failed and by
failure kind.`,
		Example: "  runner dlq stats resize-20261122-101500-a1b2c3\n  runner dlq stats --json",
		Args: func(c *cobra.Command, args []string) error {
			if len(args) > 1 {
				return usagef("dlq stats takes at most one job id")
			}
			return nil
		},
		RunE: func(_ *cobra.Command, args []string) error {
			return runDLQStats(g, args, asJSON)
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print a JSON document")
	return takesJob(g, c)
}

// dlqStats are DLQ item counts by group.
type dlqStats struct {
	Items       int          `json:"items"`
	BySignature []statsGroup `json:"by_signature"`
	ByStep      []statsGroup `json:"by_step"`
	ByKind      []statsGroup `json:"by_kind"`
}

type statsGroup struct {
	Key     string   `json:"key"`
	Count   int      `json:"count"`
	Example string   `json:"example"` // an item id
	Jobs    []string `json:"jobs,omitempty"`
}

func runDLQStats(g *globalOptions, args []string, asJSON bool) error {
	jobs := args
	if len(jobs) == 0 {
		rows, err := g.store().List()
		if err != nil {
			return err
		}
		for _, m := range rows {
			jobs = append(jobs, m.ID)
		}
	}
	groups := map[string]map[string]*statsGroup{"signature": {}, "step": {}, "kind": {}}
	st := dlqStats{}
	var unreadable []error // the stats of the other jobs are still shown
	for _, job := range jobs {
		_, err := eachJobItem(g, job, func(it dlq.Item) error {
			st.Items++
			last := it.Failures[len(it.Failures)-1]
			for dim, key := range map[string]string{"signature": it.ErrorSignature, "step": last.Step, "kind": last.Kind} {
				grp := groups[dim][key]
				if grp == nil {
					grp = &statsGroup{Key: key, Example: it.ItemID}
					groups[dim][key] = grp
				}
				grp.Count++
				if len(args) == 0 && !slices.Contains(grp.Jobs, job) {
					grp.Jobs = append(grp.Jobs, job)
				}
			}
			return nil
		})
		if err != nil {
			if len(args) > 0 {
				return err
			}
			unreadable = append(unreadable, err)
		}
	}
	st.BySignature, st.ByStep, st.ByKind = sortedGroups(groups["signature"]), sortedGroups(groups["step"]), sortedGroups(groups["kind"])
	if asJSON {
		return errors.Join(writeJSON(g.stdout, st), errors.Join(unreadable...))
	}
	if st.Items == 0 {
		if len(unreadable) == 0 {
			fmt.Fprintln(g.stderr, "no items in the dead-letter queue")
		}
		return errors.Join(unreadable...)
	}
	t := newTable(g.stdout)
	t.row(fmt.Sprintf("%d item(s) in the dead-letter queue", st.Items))
	for _, part := range []struct {
		title  string
		groups []statsGroup
	}{{"ERROR SIGNATURE", st.BySignature}, {"STEP", st.ByStep}, {"KIND", st.ByKind}} {
		t.row()
		t.row("COUNT", part.title, "EXAMPLE ITEM")
		for _, grp := range part.groups {
			t.row(grp.Count, printable.FirstLine(grp.Key, 100), grp.Example)
		}
	}
	return errors.Join(t.flush(), errors.Join(unreadable...))
}

// sortedGroups orders groups by count, largest first, then by key.
func sortedGroups(m map[string]*statsGroup) []statsGroup {
	out := make([]statsGroup, 0, len(m))
	for _, grp := range m {
		out = append(out, *grp)
	}
	slices.SortFunc(out, func(a, b statsGroup) int { return cmp.Or(b.Count-a.Count, cmp.Compare(a.Key, b.Key)) })
	return out
}
