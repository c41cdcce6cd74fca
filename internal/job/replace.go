package job

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/runnerdev/runner/internal/state"
	"github.com/runnerdev/runner/workflow"
	"github.com/runnerdev/runner/workflow/interp"
)

// Replacement is a workflow file that resume runs the rest of a job with
// (runner resume --workflow FILE), in place of the job's stored copy,
// when it fits what the job has done.
type Replacement struct {
	Workflow *workflow.Workflow
	Source   []byte // the file as read
}

// IncompatibleError is a replacement file that does not fit what the job
// has done: each problem at its place in the file.
type IncompatibleError struct {
	Job, File string
	Problems  workflow.ParseErrors
}

func (e *IncompatibleError) Error() string {
	return fmt.Sprintf("job %s cannot go on with %s, which does not fit what the job has done (the job is unchanged):\n%s",
		e.Job, e.File, e.Problems)
}

// Unwrap gives the problems: positioned errors of the file (exit 2).
func (e *IncompatibleError) Unwrap() error { return e.Problems }

// progress is how far a job has got, as resume finds it.
type progress struct {
	done        map[string]map[int]state.StepRecord // the journal: finished steps by phase and index
	itemsLoaded bool                                // the map has loaded its items (MapReduce)
	// checkpoints are the agent_template steps that the items last seen
	// running finished, by index.
	checkpoints map[int]state.StepRecord
}

// readProgress reads a stored job's progress (wf is its stored workflow).
func readProgress(st *state.Job, wf *workflow.Workflow) (progress, error) {
	p := progress{checkpoints: map[int]state.StepRecord{}}
	var err error
	if p.done, err = st.ReadJournal(); err != nil {
		return p, err
	}
	if _, err := os.Stat(st.Layout().Items); err == nil {
		p.itemsLoaded = true
	} else if !errors.Is(err, os.ErrNotExist) {
		return p, fmt.Errorf("job %s: %w", st.Meta.ID, err)
	}
	if wf.Mode != workflow.MapReduce || !p.itemsLoaded {
		return p, nil
	}
	items, err := st.LoadItemStates()
	if err != nil {
		return p, fmt.Errorf("job %s: %w", st.Meta.ID, err)
	}
	for _, it := range items.Running() {
		for _, rec := range it.Steps {
			if rec.Status != "retrying" {
				p.checkpoints[rec.Index] = rec
			}
		}
	}
	return p, nil
}

// phase is a list of steps of a workflow as the job's progress knows it.
type phase struct {
	name  string // as the journal names it; agent_template for the map's
	steps []*workflow.Step
}

// phases lists wf's phases in the order a job runs them; a phase the file
// does not have has no steps.
func phases(wf *workflow.Workflow) []phase {
	var merge []*workflow.Step
	if wf.Merge != nil {
		merge = wf.Merge.Steps
	}
	if wf.Mode == workflow.Standard {
		return []phase{{PhaseCommands, wf.Steps}, {PhaseMerge, merge}}
	}
	var template []*workflow.Step
	if wf.Map != nil {
		template = wf.Map.Template
	}
	return []phase{{PhaseSetup, wf.Setup}, {"agent_template", template}, {PhaseReduce, wf.Reduce}, {PhaseMerge, merge}}
}

// finished returns the indexes of the phase's finished steps, in order.
func (p progress) finished(ph phase) []int {
	recs := p.done[ph.name]
	if ph.name == "agent_template" {
		recs = p.checkpoints
	}
	var out []int
	for i := range recs {
		out = append(out, i)
	}
	slices.Sort(out)
	return out
}

// started reports whether the job has begun the phase.
func (p progress) started(ph phase) bool {
	if ph.name == "agent_template" {
		return p.itemsLoaded
	}
	return len(p.done[ph.name]) > 0
}

// checkReplacement returns what in the replacement next does not fit the
// progress p of the job that ran old: a different mode or isolation, a
// finished step that is not in next at its place, runs another command
// or differs in another field that shaped what it did, a step added to or
// removed from a phase the job has gone past, the map's item options once
// its items are stored, an env entry that changes a variable a finished
// step used (one the job's --set values, set, do not give; profile is the
// job's). Steps are matched by id, else by position; the step that failed
// and those after it may change.
func checkReplacement(old, next *workflow.Workflow, p progress, profile string, set map[string]string) workflow.ParseErrors {
	c := &compat{file: next.File}
	if old.Mode != next.Mode {
		c.add(workflow.Pos{}, "this is a %s workflow, and the job ran a %s one: a job's mode does not change", next.Mode, old.Mode)
		return c.errs
	}
	c.isolation(old, next)
	was, now := phases(old), phases(next)
	last := -1 // the last phase the job has begun
	for i, ph := range was {
		if p.started(ph) {
			last = i
		}
	}
	for i, ph := range was {
		c.steps(ph, now[i], p.finished(ph), i < last && ph.name != "agent_template")
	}
	if old.Mode == workflow.MapReduce && p.itemsLoaded {
		c.items(old.Map, next.Map)
	}
	c.vars(old, next, p, profile, set)
	return c.errs
}

// compat collects the problems of a replacement file.
type compat struct {
	file string
	errs workflow.ParseErrors
}

func (c *compat) add(pos workflow.Pos, format string, args ...any) {
	c.errs = append(c.errs, &workflow.ParseError{File: c.file, Pos: pos, Msg: fmt.Sprintf(format, args...)})
}

// isolation refuses a file that would run the job somewhere else: where a
// job runs (a git worktree or the checkout) is decided when it starts.
func (c *compat) isolation(old, next *workflow.Workflow) {
	if old.Mode == workflow.MapReduce {
		if old.Map != nil && next.Map != nil && old.Map.Isolation != next.Map.Isolation {
			c.add(next.Map.Pos, "map.isolation is %s here, and the job's items ran with %s: where a job runs is decided when it starts", next.Map.Isolation, old.Map.Isolation)
		}
		return
	}
	if next.Isolation != "" && next.Isolation != old.Isolation {
		c.add(workflow.Pos{}, "isolation is %s here, and the job ran with %s: where a job runs is decided when it starts", next.Isolation, old.Isolation)
	}
}

// steps checks one phase: each finished step of was must be in now, at
// its place, running the same command, the same in all else that shaped
// what it did (workflow.Step.EffectChanges); a closed phase (one the job
// has gone past) keeps its number of steps.
func (c *compat) steps(was, now phase, finished []int, closed bool) {
	for _, i := range finished {
		if i >= len(was.steps) {
			continue // a record of a step the stored copy does not have
		}
		old := was.steps[i]
		next := matchStep(old, now.steps)
		switch {
		case next == nil:
			c.add(firstPos(now.steps), "%s finished, and this file has no such step: a finished step stays in the file, at its place", stepName(was.name, old))
		case next.Index != old.Index:
			c.add(next.Pos, "%s finished, and is step %d here: finished steps keep their places (add new steps after the last one that finished)", stepName(was.name, old), next.Index+1)
		case commandOf(old) != commandOf(next):
			c.add(next.Pos, "%s finished running %s, and this file runs %s: a finished step does not run again, so its command must stay as it ran (to run the new one, start a new job)",
				stepName(was.name, old), quoteCommand(commandOf(old)), quoteCommand(commandOf(next)))
		default:
			if keys := old.EffectChanges(next); len(keys) > 0 {
				c.add(next.Pos, "%s finished, and this file changes its %s: a finished step does not run again, so what it did and what it left for the steps after it stay as they were (to change them, start a new job)",
					stepName(was.name, old), strings.Join(keys, ", "))
			}
		}
	}
	if closed && len(now.steps) != len(was.steps) {
		c.add(firstPos(now.steps), "the %s phase has %d steps here, and the job finished it with %d before going on: a finished phase's steps do not change", was.name, len(now.steps), len(was.steps))
	}
}

// matchStep finds old's step in steps: the one with its id, else the one
// at its position.
func matchStep(old *workflow.Step, steps []*workflow.Step) *workflow.Step {
	if old.ID != "" {
		if i := slices.IndexFunc(steps, func(s *workflow.Step) bool { return s.ID == old.ID }); i >= 0 {
			return steps[i]
		}
	}
	if old.Index < len(steps) {
		return steps[old.Index]
	}
	return nil
}

// commandOf is what a step runs, as compared for a finished step: its
// command and, for a foreach, its do steps'.
func commandOf(s *workflow.Step) string {
	text := string(s.Command.Kind) + ": " + s.CommandText()
	if s.Foreach != nil {
		for _, do := range s.Foreach.Do {
			text += "\n" + commandOf(do)
		}
	}
	return text
}

// quoteCommand shows a command in a message: its first line, shortened.
func quoteCommand(cmd string) string {
	first, _, more := strings.Cut(strings.TrimSpace(cmd), "\n")
	if len(first) > 60 {
		first, more = first[:57], true
	}
	if more {
		first += " …"
	}
	return "`" + first + "`"
}

// stepName names a step of a phase in a message: "step 2 (build)",
// "reduce step 1 (summary)"; an unnamed step by the first line of its
// command, "step 2 (curl $URL)".
func stepName(phaseName string, s *workflow.Step) string {
	at := (&workflow.Step{Index: s.Index}).Label(phaseName)
	what := s.Label(phaseName)
	if what == at {
		what = s.CommandLine()
	}
	return at + " (" + what + ")"
}

// firstPos is where a phase's steps begin; none: the file as a whole.
func firstPos(steps []*workflow.Step) workflow.Pos {
	if len(steps) == 0 {
		return workflow.Pos{}
	}
	return steps[0].Pos
}

// items refuses a change to what made the map's items: they are stored
// with the job (items.jsonl) and resume never makes them again.
func (c *compat) items(old, next *workflow.MapPhase) {
	if old == nil || next == nil {
		return
	}
	const why = "the job's items were made with %s when its map began and are stored with it (%s), which resume does not make again (to map other items, start a new job)"
	if a, b := templateText(old.Input), templateText(next.Input); a != b {
		c.add(next.InputPos, "map.input is %q here, and the job loaded its items from %q: "+why, b, a, "map.input "+quoteValue(a), state.ItemsFile)
	}
	for _, f := range []struct{ key, was, now string }{
		{"json_path", old.JSONPath, next.JSONPath},
		{"filter", exprText(old.Filter), exprText(next.Filter)},
		{"sort_by", fmt.Sprint(old.SortBy), fmt.Sprint(next.SortBy)},
		{"distinct", old.Distinct, next.Distinct},
		{"offset", fmt.Sprint(old.Offset), fmt.Sprint(next.Offset)},
		{"max_items", fmt.Sprint(old.MaxItems), fmt.Sprint(next.MaxItems)},
		{"id", templateText(old.ItemID), templateText(next.ItemID)},
	} {
		if f.was != f.now {
			c.add(next.Pos, "map.%s changed (%s → %s): "+why, f.key, quoteValue(f.was), quoteValue(f.now), "map."+f.key+" "+quoteValue(f.was), state.ItemsFile)
		}
	}
}

// quoteValue shows a value of the file in a message; "" is "none".
func quoteValue(v string) string {
	if v == "" || v == "[]" || v == "0" {
		return "none"
	}
	return fmt.Sprintf("%q", v)
}

func templateText(t *interp.Template) string {
	if t == nil {
		return ""
	}
	return t.String()
}

func exprText(e *workflow.Expr) string {
	if e == nil {
		return ""
	}
	return e.Source
}
