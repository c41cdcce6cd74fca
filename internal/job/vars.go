package job

import (
	"fmt"
	"maps"
	"slices"

	"github.com/runnerdev/runner/workflow"
)

// changeRefused is resume's one rule for a new value of the variable
// name, given with --set or written in the file of --workflow: refused
// when a finished step used it (usedBy), as the job's steps see one
// value of each variable. It returns why, naming the step; "" when the
// value may change.
func changeRefused(wf *workflow.Workflow, p progress, profile, name string) string {
	why := usedBy(wf, p, profile, name)
	if why == "" {
		return ""
	}
	return why + "; the job's steps see one value of each variable (to run with another, start a new job)"
}

// usedBy says which finished step used the variable name (read it, or
// read an env entry made from it, or set it), or the map input that made
// the stored items; "" when none did.
func usedBy(wf *workflow.Workflow, p progress, profile, name string) string {
	names := envReaders(wf, profile, name)
	for _, ph := range phases(wf) {
		finished := p.finished(ph)
		if ph.name == "agent_template" && p.itemsLoaded {
			finished = nil // every item that ran used the template
			for i := range ph.steps {
				finished = append(finished, i)
			}
		}
		for _, i := range finished {
			if i >= len(ph.steps) {
				continue
			}
			s := ph.steps[i]
			if _, ok := p.done[ph.name][i].Vars[name]; ok {
				return fmt.Sprintf("%s finished and set it", stepName(ph.name, s))
			}
			for _, n := range names {
				if s.Reads(n) {
					return fmt.Sprintf("%s finished and reads %s (%s:%d)%s", stepName(ph.name, s), n, wf.File, s.Pos.Line, madeFrom(n, name))
				}
			}
		}
	}
	if wf.Map != nil && p.itemsLoaded && slices.ContainsFunc(names, func(n string) bool { return workflow.TextReads(templateText(wf.Map.Input), n) }) {
		return "map.input reads it, and the job's items are stored"
	}
	return ""
}

// madeFrom says that the env entry n is made from the variable name.
func madeFrom(n, name string) string {
	if n == name {
		return ""
	}
	return ", which env makes from " + name
}

// envReaders returns name and the names of the env entries (the
// workflow's and its profile's) made from it, directly or through others.
func envReaders(wf *workflow.Workflow, profile, name string) []string {
	entries := wf.Env
	if p, err := wf.Profile(profile); profile != "" && err == nil {
		entries = slices.Concat(entries, p.Env)
	}
	names := []string{name}
	for grew := true; grew; { // each pass adds a name or ends
		grew = false
		for _, e := range entries {
			if !slices.Contains(names, e.Name) && slices.ContainsFunc(names, func(n string) bool { return workflow.TextReads(envText(e), n) }) {
				names, grew = append(names, e.Name), true
			}
		}
	}
	return names
}

// envText is what an env entry's value is made from.
func envText(e workflow.EnvVar) string {
	text := templateText(e.Value)
	if f := e.From; f != nil {
		text += "\n" + f.Command + "\n" + exprText(f.Condition) + "\n" + templateText(f.WhenTrue) + "\n" + templateText(f.WhenFalse)
	}
	return text
}

// vars refuses the env entries (the workflow's and the job's profile's)
// that next defines otherwise than old for a variable that a finished
// step used, as resume --set refuses a new value of it. A variable the
// job's --set gives (set) has that value whatever the file says.
func (c *compat) vars(old, next *workflow.Workflow, p progress, profile string, set map[string]string) {
	was, now := envDefs(old, profile), envDefs(next, profile)
	names := slices.Sorted(maps.Keys(was))
	for name := range now {
		if _, ok := was[name]; !ok {
			names = append(names, name)
		}
	}
	for _, name := range names {
		a, inOld := was[name]
		b, inNew := now[name]
		if _, given := set[name]; given || inOld == inNew && envText(a) == envText(b) {
			continue
		}
		if why := changeRefused(old, p, profile, name); why != "" {
			c.add(b.Pos, "env %s is %s here, and the job ran %s: %s", name, envShown(b, inNew), ranWith(a, inOld), why)
		}
	}
}

// envDefs returns the env entry that defines each variable of wf's env:
// the profile's where it defines one.
func envDefs(wf *workflow.Workflow, profile string) map[string]workflow.EnvVar {
	defs := map[string]workflow.EnvVar{}
	for _, e := range wf.Env {
		defs[e.Name] = e
	}
	if p, err := wf.Profile(profile); profile != "" && err == nil {
		for _, e := range p.Env {
			defs[e.Name] = e
		}
	}
	return defs
}

// ranWith says in a message what the job ran with: an env entry, or
// none.
func ranWith(e workflow.EnvVar, defined bool) string {
	if !defined {
		return "without it"
	}
	return "with " + envShown(e, true)
}

// envShown shows an env entry's definition in a message.
func envShown(e workflow.EnvVar, defined bool) string {
	switch {
	case !defined:
		return "not defined"
	case e.From == nil:
		return fmt.Sprintf("%q", templateText(e.Value))
	case e.From.Condition != nil:
		return fmt.Sprintf("made by the condition %q", e.From.Condition.Source)
	}
	return fmt.Sprintf("the output of %s", quoteCommand(e.From.Command))
}
