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
		if why := changeRefused(wf, p, r.meta.Profile, name); why != "" {
			return nil, fmt.Errorf("job %s: --set %s: %w: %s", r.meta.ID, name, ErrVarUsed, why)
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

// replace makes the plan run rep's workflow, when it fits the progress p
// of the job that ran old: its environment is resolved (a profile it
// lacks, a secret it cannot read refuse it), and its copy made with the
// secret values written in it withheld.
func (r *resumePlan) replace(ctx context.Context, rep *Replacement, old *workflow.Workflow, p progress) error {
	next := rep.Workflow
	if errs := checkReplacement(old, next, p, r.meta.Profile, r.vars); len(errs) > 0 {
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
	stored, secrets, copied := jobenv.Withhold(next, r.vars, copyOf(next, rep.Source), env, r.meta.Profile)
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

// copyOf is what a job stores of a workflow read from source: its
// composed document when it was composed from several files (it needs
// none of them), else the file as read.
func copyOf(wf *workflow.Workflow, source []byte) []byte {
	if wf.Composed != nil {
		return wf.Composed
	}
	return source
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
