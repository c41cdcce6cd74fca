package plan

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/runnerdev/runner/internal/executor"
	"github.com/runnerdev/runner/workflow"
)

// Foreach is the loop of a foreach step: where its items come from, how
// many run at once, and the steps each item runs.
type Foreach struct {
	Items           []string `json:"items,omitempty"`         // the items the file lists
	ItemsCommand    string   `json:"items_command,omitempty"` // or the command whose lines they are
	Parallel        int      `json:"parallel"`                // items at once
	ContinueOnError bool     `json:"continue_on_error,omitempty"`
	MaxItems        int      `json:"max_items,omitempty"` // 0: all
	Do              []Step   `json:"do"`
}

// newForeach describes s's loop, or returns nil for a step that has none.
func newForeach(s *workflow.Step, seed *uint64, perItem bool, agent executor.Agent) *Foreach {
	f := s.Foreach
	if f == nil {
		return nil
	}
	pf := &Foreach{Items: f.Items, Parallel: f.Parallel, ContinueOnError: f.ContinueOnError, MaxItems: f.MaxItems, Do: []Step{}}
	if f.Items == nil {
		pf.ItemsCommand = s.Command.Text.String()
	}
	for _, d := range f.Do {
		pf.Do = append(pf.Do, newStep(d, "", seed, perItem, agent)) // named under the loop, as events name it: "check[0].step 1"
	}
	return pf
}

// writeText describes the loop under its step, and its do steps indented
// below it.
func (f *Foreach) writeText(w *errWriter, seed *uint64) {
	if f == nil {
		return
	}
	parts := []string{"the lines of " + f.ItemsCommand}
	if f.Items != nil {
		quoted := make([]string, len(f.Items))
		for i, item := range f.Items {
			quoted[i] = strconv.Quote(item)
		}
		parts[0] = "items " + strings.Join(quoted, ", ")
	}
	if f.MaxItems > 0 {
		parts = append(parts, fmt.Sprintf("the first %d", f.MaxItems))
	}
	if f.Parallel > 1 {
		parts = append(parts, fmt.Sprintf("%d at once", f.Parallel))
	} else {
		parts = append(parts, "one at a time")
	}
	if f.ContinueOnError {
		parts = append(parts, "a failed item does not stop the others, but fails the step once all ran")
	}
	w.printf("     foreach: %s; for each item:\n", strings.Join(parts, "; "))
	do := &errWriter{w: indented{w}}
	for _, s := range f.Do {
		s.writeText(do, seed)
	}
	if w.err == nil {
		w.err = do.err
	}
}

// indented writes each line it is given (whole lines, as printf writes
// them) further right, under the step that holds them.
type indented struct{ w *errWriter }

func (in indented) Write(p []byte) (int, error) {
	for line := range strings.Lines(string(p)) {
		in.w.printf("     %s", line)
	}
	return len(p), in.w.err
}
