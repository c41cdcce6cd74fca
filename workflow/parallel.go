package workflow

import (
	"iter"
	"strconv"
)

// Parallel is a parallel: block of a phase's steps (runner's own form;
// Prodigy has none): its steps run at the same time. They stand in the
// phase's list one after another, numbered as any step (Step.Index), each
// pointing at its block (Step.Parallel), so that the journal, the step
// logs, runner logs and resume know them as the phase's steps.
type Parallel struct {
	Pos         Pos
	Name        string // its name:, "" when it has none
	MaxParallel int    // steps at once; 0: all of them
	// FailFast (the default) cancels the block's other steps as one
	// fails, as a timeout or an interrupt would; false lets every step of
	// the block run before the failure stops the workflow.
	FailFast bool
	First    int // the Index of the block's first step
	Count    int // how many steps the block holds
}

// Label names the block in events (their parallel field) and plans: its
// name, else "parallel steps N-M" (the 1-based numbers of its steps,
// prefixed with the phase as Step.Label does).
func (p *Parallel) Label(phase string) string {
	if p.Name != "" {
		return p.Name
	}
	n := "parallel steps " + strconv.Itoa(p.First+1) + "-" + strconv.Itoa(p.First+p.Count)
	if phase == "" || phase == PhaseCommands {
		return n
	}
	return phase + " " + n
}

// Groups yields steps as they run: a step alone, or the steps of one
// parallel: block together.
func Groups(steps []*Step) iter.Seq[[]*Step] {
	return func(yield func([]*Step) bool) {
		for i := 0; i < len(steps); {
			j := i + 1
			for p := steps[i].Parallel; p != nil && j < len(steps) && steps[j].Parallel == p; j++ {
			}
			if !yield(steps[i:j]) {
				return
			}
			i = j
		}
	}
}
