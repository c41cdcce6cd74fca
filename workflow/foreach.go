package workflow

import (
	"iter"
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

// AllSteps yields steps and, after each foreach step, the steps of its do
// (and theirs), so that a question about what a list of steps runs also
// sees the steps nested in it.
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
	}
	return true
}

// CommandText is the step's command as events and plans show it; a
// foreach shows its items command, or its items.
func (s *Step) CommandText() string {
	switch {
	case s.Foreach == nil:
		return s.Command.Text.String()
	case s.Foreach.Items == nil:
		return "foreach: " + s.Command.Text.String()
	}
	quoted := make([]string, len(s.Foreach.Items))
	for i, item := range s.Foreach.Items {
		quoted[i] = strconv.Quote(item)
	}
	return "foreach: [" + strings.Join(quoted, ", ") + "]"
}
