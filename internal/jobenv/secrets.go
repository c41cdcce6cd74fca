package jobenv

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"

	"github.com/runnerdev/runner/internal/executor"
	"github.com/runnerdev/runner/internal/state"
	"github.com/runnerdev/runner/workflow"
	"github.com/runnerdev/runner/workflow/interp"
)

// minSecretLen is the shortest value that is masked: shorter values would
// mask ordinary words and numbers everywhere.
const minSecretLen = 4

var secretNameParts = []string{"TOKEN", "SECRET", "PASSWORD", "KEY"}

// IsSecretName reports whether an environment variable's value is masked.
func IsSecretName(wf *workflow.Workflow, name string) bool {
	if slices.Contains(wf.Secrets, name) {
		return true
	}
	upper := strings.ToUpper(name)
	for _, p := range secretNameParts {
		if strings.Contains(upper, p) {
			return true
		}
	}
	return false
}

// secretValues lists the secret values in KEY=VALUE entries, each once,
// with the name it was first found under.
func secretValues(wf *workflow.Workflow, envs ...[]string) (names, values []string) {
	seen := map[string]bool{}
	for _, env := range envs {
		for _, kv := range env {
			k, v, ok := strings.Cut(kv, "=")
			if !ok || len(v) < minSecretLen || seen[v] || !IsSecretName(wf, k) {
				continue
			}
			seen[v] = true
			names, values = append(names, k), append(values, v)
		}
	}
	return names, values
}

// secretMasker returns a function that replaces secret values with ***,
// or nil when there are none. Entries are KEY=VALUE.
func secretMasker(wf *workflow.Workflow, envs ...[]string) func(string) string {
	_, values := secretValues(wf, envs...)
	if len(values) == 0 {
		return nil
	}
	pairs := make([]string, 0, 2*len(values))
	for _, v := range values {
		pairs = append(pairs, v, "***")
	}
	return strings.NewReplacer(pairs...).Replace
}

// varSealer hides secret values in the variables the journal stores (a
// capture may hold one) as ***NAME***, and puts back the values a resumed
// job was given again; nil when there are no secrets.
type varSealer struct {
	seal, unseal *strings.Replacer
}

func newVarSealer(wf *workflow.Workflow, envs ...[]string) *varSealer {
	names, values := secretValues(wf, envs...)
	if len(values) == 0 {
		return nil
	}
	var seal, unseal []string
	for i, v := range values {
		ref := "***" + names[i] + "***"
		seal, unseal = append(seal, v, ref), append(unseal, ref, v)
	}
	return &varSealer{seal: strings.NewReplacer(seal...), unseal: strings.NewReplacer(unseal...)}
}

// Seal returns vars with secret values hidden, for the journal.
func (s *varSealer) Seal(vars map[string]any) map[string]any {
	if s == nil || vars == nil {
		return vars
	}
	return replaceStrings(vars, s.seal).(map[string]any)
}

// Unseal puts secret values back into vars read from the journal.
func (s *varSealer) Unseal(vars map[string]any) map[string]any {
	if s == nil || vars == nil {
		return vars
	}
	return replaceStrings(vars, s.unseal).(map[string]any)
}

// replaceStrings copies v (a variable's value) with r applied to every
// string in it.
func replaceStrings(v any, r *strings.Replacer) any {
	switch t := v.(type) {
	case string:
		return r.Replace(t)
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			out[i] = replaceStrings(e, r)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, e := range t {
			out[k] = replaceStrings(e, r)
		}
		return out
	}
	return v
}

// withheldMark replaces secret values written in the stored workflow copy:
// a plain word, so that the copy stays valid YAML in any quoting.
const withheldMark = "WITHHELD"

// Withhold splits a new job's variables into those stored with it and the
// names of the secrets that are not: the secret --set values and the
// secret values written in the workflow file (env, profiles, secrets),
// which it returns with them replaced (in every profile, the job's or
// not). Resume takes those again from --set or the environment.
func Withhold(wf *workflow.Workflow, set map[string]string, source []byte, env *Env, profile string) (stored map[string]string, names []string, copied []byte) {
	stored = map[string]string{}
	for k, v := range set {
		if IsSecretName(wf, k) {
			names = append(names, k)
		} else {
			stored[k] = v
		}
	}
	copied = source
	for _, kv := range slices.Concat(env.env, env.secrets) {
		k, v, _ := strings.Cut(kv, "=")
		if len(v) < minSecretLen || !IsSecretName(wf, k) || !bytes.Contains(copied, []byte(v)) {
			continue
		}
		copied = bytes.ReplaceAll(copied, []byte(v), []byte(withheldMark))
		if _, given := set[k]; !given && !slices.Contains(names, k) {
			names = append(names, k)
		}
	}
	// The secrets written in the profiles the job does not use are not
	// its own, but they are secrets all the same.
	for _, v := range idleProfileSecrets(wf, profile) {
		if len(v) >= minSecretLen {
			copied = bytes.ReplaceAll(copied, []byte(v), []byte(withheldMark))
		}
	}
	slices.Sort(names)
	return stored, names, copied
}

// Errors of giving a stored job its secrets again (resume, dlq retry).
var (
	ErrMissingSecrets = errors.New("secrets not given")
	ErrNotSecret      = errors.New("not one of the job's secrets")
)

// Restore returns a stored job's variables with its withheld secrets
// taken again from set or the environment; set may name nothing else.
func Restore(m state.Meta, set map[string]string) (map[string]string, error) {
	for k := range set {
		if !slices.Contains(m.Secrets, k) {
			return nil, fmt.Errorf("job %s: --set %s: %w (%s); its other variables are stored with it",
				m.ID, k, ErrNotSecret, cmp.Or(strings.Join(m.Secrets, ", "), "it has none"))
		}
	}
	vars := maps.Clone(m.Vars)
	if vars == nil {
		vars = map[string]string{}
	}
	var missing []string
	for _, name := range m.Secrets {
		v, ok := set[name]
		if !ok {
			v, ok = os.LookupEnv(name)
		}
		if !ok {
			missing = append(missing, name)
		}
		vars[name] = v
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("job %s: %w: %s (they are not stored: give them with --set NAME=VALUE or in the environment)",
			m.ID, ErrMissingSecrets, strings.Join(missing, ", "))
	}
	return vars, nil
}

// maskedError is an error whose message has the secrets masked; it still
// unwraps to the original for errors.Is and errors.As.
type maskedError struct {
	err error
	msg string
}

func (e *maskedError) Error() string { return e.msg }
func (e *maskedError) Unwrap() error { return e.err }

// CarriedSecret is a secret whose value would travel with a job: its
// name and where the value is given.
type CarriedSecret struct {
	Name  string
	Where string // "with --set", "in the workflow file", or "in the workflow file, " and the place
}

// CarriedSecrets lists the secrets of a job about to start whose values
// would travel with it: given by --set (set) or written in the workflow
// file itself (source: env, profiles, secrets, a step's env, agent.env),
// where a secret's value is read from the environment or a reference
// otherwise. A job whose items run on other machines refuses them:
// there, each machine gives its own.
func CarriedSecrets(ctx context.Context, wf *workflow.Workflow, source []byte, set map[string]string, profile string) ([]CarriedSecret, error) {
	env, err := Resolve(ctx, wf, Spec{Set: set, Profile: profile}, os.Environ())
	if err != nil {
		return nil, err
	}
	_, names, _ := Withhold(wf, set, source, env, profile)
	var out []CarriedSecret
	for _, name := range names {
		where := "in the workflow file"
		if _, given := set[name]; given {
			where = "with --set"
		}
		out = append(out, CarriedSecret{Name: name, Where: where})
	}
	lookup := executor.NewScope(env.vars, os.Environ()).PlainLookup()
	for _, s := range stepEnvSecrets(wf, lookup) {
		if len(s.value) >= minSecretLen && bytes.Contains(source, []byte(s.value)) {
			out = append(out, CarriedSecret{Name: s.name, Where: "in the workflow file, " + s.where})
		}
	}
	return out, nil
}

// envSecret is the value of a secret-named entry of a step's env or of
// agent.env, and where it is written.
type envSecret struct {
	name, value, where string
}

// stepEnvSecrets lists the secret-named entries of every step's env (in
// every phase, foreach do steps and handlers included) and of agent.env,
// with their values expanded over lookup (an entry that does not expand
// yet, such as one reading a capture, is left out).
func stepEnvSecrets(wf *workflow.Workflow, lookup interp.Lookup) []envSecret {
	var out []envSecret
	add := func(vars []workflow.EnvVar, where string) {
		for _, e := range vars {
			if e.Value == nil || !IsSecretName(wf, e.Name) {
				continue
			}
			if v, err := e.Value.Expand(lookup, interp.Plain); err == nil {
				out = append(out, envSecret{name: e.Name, value: v, where: where})
			}
		}
	}
	for s := range workflow.AllSteps(wf.PhaseSteps()) {
		add(s.Env, fmt.Sprintf("line %d (the env of step %q)", s.Pos.Line, s.Label("")))
	}
	if wf.Agent != nil {
		add(wf.Agent.Env, "agent.env")
	}
	return out
}

// Secrets hides a job's secret values: masked (***) in what it shows,
// sealed (***NAME***) in the variables it stores; a nil *Secrets hides
// nothing.
type Secrets struct {
	mask   func(string) string // nil: no secrets
	sealer *varSealer
	// withheld is NAME=VALUE for each secret withheld from the stored
	// job, as this process was given it.
	withheld []string
}

// Secrets returns how a job whose environment is e hides its secrets: the
// values of e's secret-named variables and secrets, of the secret-named
// env entries of wf's steps as sc expands them, and of environ's
// secret-named variables. withheld names the secrets not stored with the
// job (Meta.Secrets).
func (e *Env) Secrets(wf *workflow.Workflow, sc *executor.Scope, withheld []string, environ []string) *Secrets {
	steps := stepSecrets(wf, sc)
	return &Secrets{
		mask:   secretMasker(wf, e.env, e.secrets, steps, environ),
		sealer: newVarSealer(wf, e.env, e.secrets, steps, environ),
		withheld: slices.DeleteFunc(slices.Concat(e.env, e.secrets), func(kv string) bool {
			name, _, _ := strings.Cut(kv, "=")
			return !slices.Contains(withheld, name)
		}),
	}
}

// Masker is Mask, or nil when there is nothing to mask.
func (s *Secrets) Masker() func(string) string {
	if s == nil {
		return nil
	}
	return s.mask
}

// Mask replaces the secret values in str with ***.
func (s *Secrets) Mask(str string) string {
	if s == nil || s.mask == nil {
		return str
	}
	return s.mask(str)
}

// MaskError returns err with the secret values in its message masked; it
// unwraps to err.
func (s *Secrets) MaskError(err error) error {
	if err == nil {
		return err
	}
	if msg := s.Mask(err.Error()); msg != err.Error() {
		return &maskedError{err: err, msg: msg}
	}
	return err
}

// Seal returns vars with the secret values hidden, to store.
func (s *Secrets) Seal(vars map[string]any) map[string]any {
	if s == nil {
		return vars
	}
	return s.sealer.Seal(vars)
}

// Unseal puts the secret values back into vars read from the store.
func (s *Secrets) Unseal(vars map[string]any) map[string]any {
	if s == nil {
		return vars
	}
	return s.sealer.Unseal(vars)
}

// Withheld returns, as NAME=VALUE, the secrets withheld from the stored
// job as this process was given them (by --set or its environment): what
// a process that opens the job must find in its environment. They go only
// there, never on a command line or in a file.
func (s *Secrets) Withheld() []string {
	if s == nil {
		return nil
	}
	return slices.Clone(s.withheld)
}
