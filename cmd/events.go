package cmd

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/runnerdev/runner/workflow/eventlog"
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
	f.BoolVarP(&o.Follow, "follow", "f", false, "keep printing new events until the job ends")
	f.StringSliceVar(&o.Type, "type", nil, "only events of these types")
	f.StringVar(&o.Item, "item", "", "only events of this item")
	return c
}

func (o eventsOptions) filter() eventlog.Filter {
	return func(e eventlog.Event) bool {
		if len(o.Type) > 0 && !contains(o.Type, e.Type) {
			return false
		}
		return o.Item == "" || e.Str("item_id") == o.Item
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func runEvents(ctx context.Context, g *globalOptions, o eventsOptions, id string) error {
	j, err := g.store().Open(id)
	if err != nil {
		return err
	}
	if o.Follow {
		end := func(e eventlog.Event) bool {
			switch e.Type {
			case "job_completed", "job_failed", "job_stopped", "job_interrupted":
				return true
			}
			return false
		}
		return eventlog.Follow(ctx, j.EventsPath(), o.filter(), func(e eventlog.Event) error {
			return printEvent(g, o.JSON, e)
		}, end)
	}
	events, err := eventlog.Read(j.EventsPath(), o.filter())
	if err != nil {
		return err
	}
	if o.JSON {
		if events == nil {
			events = []eventlog.Event{}
		}
		enc := json.NewEncoder(g.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(events)
	}
	for _, e := range events {
		if err := printEvent(g, false, e); err != nil {
			return err
		}
	}
	return nil
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
	keys := make([]string, 0, len(e.Fields))
	for k := range e.Fields {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		v, _ := json.Marshal(e.Fields[k])
		fmt.Fprintf(&b, " %s=%s", k, v)
	}
	_, err := fmt.Fprintf(g.stdout, "%s  %-18s%s\n", e.Time.Local().Format(time.DateTime+".000"), e.Type, b.String())
	return err
}
