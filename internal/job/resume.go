package job

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"

	"github.com/runnerdev/runner/internal/executor"
	"github.com/runnerdev/runner/internal/jobenv"
	"github.com/runnerdev/runner/internal/state"
	"github.com/runnerdev/runner/workflow"
)

// ErrVarUsed is resume's refusal of --set NAME=VALUE for a variable that
// a finished step used: the job's steps see one value of each variable.
var ErrVarUsed = errors.New("a finished step used it")

// resumePlan is what resume reopens a stored job with.
type resumePlan struct {
	wf   *workflow.Workflow
	vars map[string]string // the job's variables, its secrets given again
	env  *jobenv.Env       // resolved for a replacement; nil: open resolves it
	copy []byte            // a replacement's source as stored (secrets withheld); nil: the copy stays
	meta state.Meta        // the job's metadata with resume's changes
	set  []string          // the variables --set gives a new value
}

// planResume loads a stored job (whose lock st holds) and applies what
// resume was given: --set values (opts.Vars: the job's secrets again, or
// variables no finished step used) and a replacement workflow file that
// fits the job's progress. Nothing is written.
func planResume(st *state.Job, opts Options) (*resumePlan, error) {
	old, err := loadStored(st)
	if err != nil {
		return nil, err
	}
	p, err := readProgress(st, old)
	if err != nil {
		return nil, err
	}
	r := &resumePlan{wf: old, meta: st.Meta}
	r.meta.Vars, r.meta.Secrets = maps.Clone(st.Meta.Vars), slices.Clone(st.Meta.Secrets)
	given, err := r.setVars(old, p, opts.Vars)
	if err != nil {
		return nil, err
	}
	if r.vars, err = jobenv.Restore(r.meta, given); err != nil {
		return nil, err
	}
	if opts.Replace != nil {
		if err := r.replace(opts.context(), opts.Replace, old, p); err != nil {
			return nil, err
		}
		if copied, err := os.ReadFile(st.WorkflowCopy()); err == nil && bytes.Equal(copied, r.copy) {
			r.copy = nil // the file is the copy: nothing to replace or record
		}
	}
	return r, nil
}

// setVars takes --set values: a secret of the job's is given again
// (returned); any other variable is set for the rest of the job, stored
// with it unless a secret, when no finished step used it.
func (r *resumePlan) setVars(wf *workflow.Workflow, p progress, set map[string]string) (given map[string]string, err error) {
	given = map[string]string{}
	for _, name := range slices.Sorted(maps.Keys(set)) {
		v := set[name]
		if slices.Contains(r.meta.Secrets, name) {
			given[name] = v
			continue
		}
		if was, ok := r.meta.Vars[name]; ok && was == v {
			continue
		}
		if why := usedBy(wf, p, r.meta.Profile, name); why != "" {
			return nil, fmt.Errorf("job %s: --set %s: %w: %s; the job's steps see one value of each variable (to run with another, start a new job)",
				r.meta.ID, name, ErrVarUsed, why)
		}
		r.set = append(r.set, name)
		if jobenv.IsSecretName(wf, name) {
			r.meta.Secrets = append(r.meta.Secrets, name)
			slices.Sort(r.meta.Secrets)
			given[name] = v
			continue
		}
		if r.meta.Vars == nil {
			r.meta.Vars = map[string]string{}
		}
		r.meta.Vars[name] = v
	}
	return given, nil
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

// replace makes the plan run rep's workflow, when it fits the progress p
// of the job that ran old: its environment is resolved (a profile it
// lacks, a secret it cannot read refuse it), and its copy made with the
// secret values written in it withheld.
func (r *resumePlan) replace(ctx context.Context, rep *Replacement, old *workflow.Workflow, p progress) error {
	next := rep.Workflow
	if errs := checkReplacement(old, next, p); len(errs) > 0 {
		return &IncompatibleError{Job: r.meta.ID, File: next.File, Problems: errs}
	}
	next.Name = r.meta.Workflow
	RestoreIsolation(next, r.meta)
	environ := os.Environ()
	env, err := jobenv.Resolve(ctx, next, jobenv.Spec{Set: r.vars, Profile: r.meta.Profile, Cached: r.meta.EnvCache}, environ)
	if err != nil {
		return fmt.Errorf("job %s: %w", r.meta.ID, err)
	}
	if err := next.ResolveDurations(executor.NewScope(env.Vars(), environ).PlainLookup()); err != nil {
		return err
	}
	stored, secrets, copied := jobenv.Withhold(next, r.vars, rep.Source, env, r.meta.Profile)
	r.meta.Secrets = slices.Compact(slices.Sorted(slices.Values(slices.Concat(r.meta.Secrets, secrets))))
	maps.DeleteFunc(stored, func(name, _ string) bool { return slices.Contains(r.meta.Secrets, name) })
	r.meta.Vars, r.meta.EnvCache = stored, env.Cached()
	r.meta.File, r.meta.Steps = next.File, len(next.Steps)
	r.meta.FilePath, r.meta.FileSum = absPath(next.File), fileSum(rep.Source)
	r.wf, r.env, r.copy = next, env, copied
	return nil
}

// apply stores the plan's changes: the replacement copy (the old one
// kept beside it, whose name it returns) and the metadata.
func (r *resumePlan) apply(st *state.Job) (kept string, err error) {
	if r.copy != nil {
		if kept, err = st.ReplaceWorkflowCopy(r.copy); err != nil {
			return "", err
		}
	}
	st.Meta = r.meta
	return kept, st.Save()
}

// loadStored loads a stored job's workflow copy as the job ran it.
func loadStored(st *state.Job) (*workflow.Workflow, error) {
	wf, err := workflow.Load(st.WorkflowCopy())
	if err != nil {
		return nil, fmt.Errorf("job %s: stored workflow: %w", st.Meta.ID, err)
	}
	// The copy's file name is not the workflow's: a nameless workflow keeps
	// the name it was run under (its file's), as recorded at the start.
	wf.File, wf.Name = st.Meta.File, st.Meta.Workflow
	RestoreIsolation(wf, st.Meta)
	return wf, nil
}

// fileSum is the SHA-256 of a workflow file's content, in hex.
func fileSum(source []byte) string {
	sum := sha256.Sum256(source)
	return hex.EncodeToString(sum[:])
}

// absPath is path made absolute; "" when it cannot be.
func absPath(path string) string {
	abs, err := filepath.Abs(path)
	if err != nil {
		return ""
	}
	return abs
}

// ChangedFile returns the workflow file the job was started from (or last
// resumed with), as it can be typed here, when the file there now differs
// from it; "" when it is the same, gone, unreadable, or not recorded (a
// job recorded before runner recorded it).
func ChangedFile(m state.Meta) string {
	if m.FilePath == "" || m.FileSum == "" {
		return ""
	}
	source, err := workflow.ReadFile(m.FilePath)
	if err != nil || fileSum(source) == m.FileSum {
		return ""
	}
	if absPath(m.File) == m.FilePath {
		return m.File
	}
	return m.FilePath
}

// changedFile is the file the job_changed event names: the replacement's,
// or "" when only variables changed.
func (r *resumePlan) changedFile(kept string) string {
	if kept == "" {
		return ""
	}
	return r.meta.File
}
