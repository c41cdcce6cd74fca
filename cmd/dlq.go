package cmd

import (
	"encoding/json"
	"fmt"
	"io"
	"reflect"
	"strings"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/vm"
	"github.com/spf13/cobra"

	"github.com/runnerdev/runner/dlq"
	"github.com/runnerdev/runner/jsonvalue"
	"github.com/runnerdev/runner/state"
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
	c.AddCommand(
		newDLQListCommand(g),
		newDLQShowCommand(g),
		newDLQRetryCommand(g),
		newDLQStatsCommand(g),
		newDLQExportCommand(g),
		newDLQPurgeCommand(g),
	)
	return c
}

// openDLQ opens a job's queue for reading; a job without failures has an
// empty queue.
func openDLQ(g *globalOptions, jobID string) (*state.Job, *dlq.DB, error) {
	j, err := g.store().Open(jobID)
	if err != nil {
		return nil, nil, err
	}
	d, err := dlq.Open(j.Path(dlqFile), dlq.Options{ReadOnly: true})
	if err != nil {
		return nil, nil, err
	}
	return j, d, nil
}

// dlqItems returns a job's queued items that match filter, at most limit
// (0: all).
func dlqItems(g *globalOptions, jobID, filter string, limit int) ([]dlq.Item, error) {
	match, err := compileItemFilter(filter)
	if err != nil {
		return nil, err
	}
	_, d, err := openDLQ(g, jobID)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	var (
		items   []dlq.Item
		evalErr error
	)
	err = d.List(func(it dlq.Item) bool {
		ok, err := match(it)
		if err != nil {
			evalErr = err
			return false
		}
		if ok {
			items = append(items, it)
		}
		return limit <= 0 || len(items) < limit
	})
	if err == nil {
		err = evalErr
	}
	return items, err
}

// compileItemFilter compiles a --filter expression; "" matches every item.
// A name that is not a field of filterItem is an error at once, not a
// filter that matches nothing.
func compileItemFilter(src string) (func(dlq.Item) (bool, error), error) {
	if strings.TrimSpace(src) == "" {
		return func(dlq.Item) (bool, error) { return true, nil }, nil
	}
	prog, err := expr.Compile(src, expr.Env(filterItem{}), expr.AsBool())
	if err != nil {
		msg, _, _ := strings.Cut(err.Error(), "\n")
		if strings.HasPrefix(msg, "unknown name ") {
			msg += "; a DLQ item has the fields " + strings.Join(filterFields(), ", ")
		}
		return nil, usagef("--filter %q: %s", src, msg)
	}
	return func(it dlq.Item) (bool, error) { return runItemFilter(prog, src, it) }, nil
}

func runItemFilter(prog *vm.Program, src string, it dlq.Item) (bool, error) {
	v, err := expr.Run(prog, newFilterItem(it))
	if err != nil {
		msg, _, _ := strings.Cut(err.Error(), "\n")
		return false, fmt.Errorf("--filter %q on item %s: %s", src, it.ItemID, msg)
	}
	return v.(bool), nil
}

// filterItem is what a --filter expression sees of a DLQ item: the item,
// its queue fields and its last failure's.
type filterItem struct {
	Item           any    `expr:"item"`
	ItemID         string `expr:"item_id"`
	ItemIndex      int    `expr:"item_index"`
	FailureCount   int    `expr:"failure_count"`
	ErrorSignature string `expr:"error_signature"`
	Kind           string `expr:"kind"`
	ExitCode       int    `expr:"exit_code"`
	Step           string `expr:"step"`
	Message        string `expr:"message"`
}

func newFilterItem(it dlq.Item) filterItem {
	item, _ := jsonvalue.Decode(it.Item)
	f := filterItem{Item: item, ItemID: it.ItemID, ItemIndex: it.ItemIndex, FailureCount: it.FailureCount, ErrorSignature: it.ErrorSignature}
	if n := len(it.Failures); n > 0 {
		last := it.Failures[n-1]
		f.Kind, f.ExitCode, f.Step, f.Message = last.Kind, last.ExitCode, last.Step, last.Message
	}
	return f
}

// filterFields names the fields of filterItem, in order.
func filterFields() []string {
	t := reflect.TypeFor[filterItem]()
	names := make([]string, t.NumField())
	for i := range names {
		names[i] = t.Field(i).Tag.Get("expr")
	}
	return names
}

// writeJSON writes v as one indented JSON document.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// firstLine shortens a message to its first line, at most n runes.
func firstLine(s string, n int) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}
