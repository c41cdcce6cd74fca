package dlq

import (
	"errors"
	"reflect"
	"strings"

	"github.com/expr-lang/expr"

	"github.com/runnerdev/runner/internal/jsonvalue"
)

// Filter selects DLQ items (`dlq list --filter`, `dlq retry --filter`).
type Filter func(Item) (bool, error)

// All is the filter that matches every item.
func All(Item) (bool, error) { return true, nil }

// CompileFilter compiles an expr-lang expression over an item's fields
// (filterFields); "" matches every item. A name that is not a field is an
// error at once, not a filter that matches nothing.
func CompileFilter(src string) (Filter, error) {
	if strings.TrimSpace(src) == "" {
		return All, nil
	}
	prog, err := expr.Compile(src, expr.Env(filterItem{}), expr.AsBool())
	if err != nil {
		msg := firstLineOf(err)
		if strings.HasPrefix(msg, "unknown name ") {
			msg += "; a DLQ item has the fields " + strings.Join(filterFields(), ", ")
		}
		return nil, errors.New(msg)
	}
	return func(it Item) (bool, error) {
		v, err := expr.Run(prog, newFilterItem(it))
		if err != nil {
			return false, errors.New(firstLineOf(err))
		}
		return v.(bool), nil
	}, nil
}

// firstLineOf is an expr error without the source excerpt expr adds.
func firstLineOf(err error) string {
	msg, _, _ := strings.Cut(err.Error(), "\n")
	return msg
}

// filterItem is what a filter sees of a DLQ item: the item, its queue
// fields and its last failure's.
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

func newFilterItem(it Item) filterItem {
	item, _ := jsonvalue.Decode(it.Item)
	f := filterItem{Item: item, ItemID: it.ItemID, ItemIndex: it.ItemIndex, FailureCount: it.FailureCount, ErrorSignature: it.ErrorSignature}
	if n := len(it.Failures); n > 0 {
		last := it.Failures[n-1]
		f.Kind, f.ExitCode, f.Step, f.Message = last.Kind, last.ExitCode, last.Step, last.Message
	}
	return f
}

// filterFields names the fields a filter can read, in order.
func filterFields() []string {
	t := reflect.TypeFor[filterItem]()
	names := make([]string, t.NumField())
	for i := range names {
		names[i] = t.Field(i).Tag.Get("expr")
	}
	return names
}
