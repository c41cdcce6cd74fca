package workflow

import (
	"iter"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// ForeachDefaultParallel is how many items `parallel: true` runs at once:
// Prodigy's fixed default of 10 workers (its foreach page), not the number
// of CPUs.
const ForeachDefaultParallel = 10

// Foreach is the loop of a foreach: step (Prodigy's foreach command): its
// Do steps run once per item, with ${item}, ${index} and ${total} set.
type Foreach struct {
	// Items are the items the file lists; nil when they are the non-empty
	// lines printed by the step's Command.Text, a shell command.
	Items           []string
	Parallel        int  // items run at once; 1: one after another
	ContinueOnError bool // a failed item does not fail the step
	MaxItems        int  // only the first MaxItems items run; 0: all
	Do              []*Step
}

// AllSteps yields steps and, after each, the steps nested in it: a
// foreach's do steps and the steps of its handlers (on_success,
// on_failure's on_success, on_exit_code by code), and theirs, so that a
// question about what a list of steps runs sees them all.
func AllSteps(steps []*Step) iter.Seq[*Step] {
	return func(yield func(*Step) bool) {
		walkSteps(steps, yield)
	}
}

func walkSteps(steps []*Step, yield func(*Step) bool) bool {
	for _, s := range steps {
		if !yield(s) {
			return false
		}
		if s.Foreach != nil && !walkSteps(s.Foreach.Do, yield) {
			return false
		}
		if !walkSteps(s.OnSuccess, yield) || !walkSteps(s.OnFailure.OnSuccess, yield) {
			return false
		}
		for _, code := range slices.Sorted(maps.Keys(s.OnExitCode)) {
			if !walkSteps(s.OnExitCode[code], yield) {
				return false
			}
		}
	}
	return true
}

// CommandText is the step's command as events and plans show it; a
// foreach shows its items command, or its items.
func (s *Step) CommandText() string {
	switch {
	case s.Foreach == nil:
		return s.Command.source()
	case s.Foreach.Items == nil:
		return "foreach: " + s.Command.Text.String()
	}
	quoted := make([]string, len(s.Foreach.Items))
	for i, item := range s.Foreach.Items {
		quoted[i] = strconv.Quote(item)
	}
	return "foreach: [" + strings.Join(quoted, ", ") + "]"
}
