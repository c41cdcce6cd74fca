// Package jobenv is a job's environment: the env forms, env_files,
// profiles and secrets of its workflow resolved over the process
// environment and --set, and its secret values masked in what it shows
// and sealed in what it stores.
package jobenv

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/runnerdev/runner/internal/executor"
	"github.com/runnerdev/runner/internal/proc"
	"github.com/runnerdev/runner/workflow"
	"github.com/runnerdev/runner/workflow/interp"
)

// CommandTimeout bounds an env {command} run at job start.
const CommandTimeout = time.Minute

// Error is a job environment that could not be resolved: an env command
// failed, a secret or an env file could not be read, the profile does not
// exist. The job does not start (or resume).
type Error struct{ Err error }

func (e *Error) Error() string { return e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

// Env is a job's environment as a process that opens the job resolves
// it. Sources, each over the one before: the process environment,
// env_files in order, the workflow env, the profile, --set; then, after
// each step's own env, the secrets.
type Env struct {
	vars    map[string]any    // for ${NAME}; "env" (${env.NAME}) holds these and the process environment
	env     []string          // NAME=VALUE over the process environment, later entries winning
	secrets []string          // NAME=VALUE of the secrets mapping
	cached  map[string]string // outputs of commands with cache: true, to keep with the job
}

// Spec is what a job's environment is resolved with besides its
// workflow: the --set values, the profile, and the command outputs kept
// from the job's start.
type Spec struct {
	Set     map[string]string
	Profile string
	Cached  map[string]string
}

// Resolve resolves wf's environment over environ (the process
// environment); ctx ends the env commands it runs. A variable that --set
// gives (or the profile, below --set) takes that value where the workflow
// env defines it, so that the entries after it see it, and its command or
// condition is not evaluated.
func Resolve(ctx context.Context, wf *workflow.Workflow, spec Spec, environ []string) (*Env, error) {
	r, err := resolveLayers(ctx, wf, spec, environ)
	if err == nil {
		return r, nil
	}
	// A command's stderr in the error may print a secret resolved before.
	if mask := secretMasker(wf, r.env, r.secrets, environ); mask != nil {
		err = &maskedError{err: err, msg: mask(err.Error())}
	}
	return nil, &Error{err}
}

// resolveLayers resolves the layers for Resolve, which marks its errors;
// on an error it returns what it resolved before it.
func resolveLayers(ctx context.Context, wf *workflow.Workflow, spec Spec, environ []string) (*Env, error) {
	r := &Env{vars: map[string]any{}, cached: map[string]string{}}
	l := &layers{ctx: ctx, wf: wf, spec: spec, environ: environ, r: r, envMap: map[string]any{}, defined: map[string]bool{}}
	// ${env.NAME} reads the process environment too, as Prodigy's does.
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok {
			l.envMap[k] = v
		}
	}
	r.vars["env"] = l.envMap
	// --set wins over every layer and is seen by all of them.
	for k, v := range spec.Set {
		r.vars[k] = v
	}
	l.scope = executor.NewScope(r.vars, environ)
	if spec.Profile != "" {
		var err error
		if l.profile, err = wf.Profile(spec.Profile); err != nil {
			return r, err
		}
	}
	if err := r.readEnvFiles(wf, l.scope.PlainLookup(), l.add); err != nil {
		return r, err
	}
	for _, e := range wf.Env {
		v, err := l.value(e)
		if err != nil {
			return r, fmt.Errorf("env %s: %w", e.Name, err)
		}
		l.add(e.Name, v)
	}
	if l.profile != nil {
		for _, e := range l.profile.Env {
			if slices.ContainsFunc(wf.Env, func(w workflow.EnvVar) bool { return w.Name == e.Name }) {
				continue // applied where env defines it
			}
			v, err := l.value(e)
			if err != nil {
				return r, fmt.Errorf("profiles.%s.%s: %w", l.profile.Name, e.Name, err)
			}
			l.add(e.Name, v)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(spec.Set)) {
		if !l.defined[k] && !slices.ContainsFunc(wf.SecretVars, func(s workflow.Secret) bool { return s.Name == k }) {
			l.add(k, spec.Set[k])
		}
	}
	return r, l.secrets()
}

// layers is the state of resolving a job's environment.
type layers struct {
	ctx     context.Context // ends env commands
	wf      *workflow.Workflow
	spec    Spec
	environ []string
	profile *workflow.Profile
	r       *Env
	scope   *executor.Scope // over r.vars: reads what is defined so far
	envMap  map[string]any  // ${env.NAME}
	defined map[string]bool // the names the layers defined so far
}

// add defines a variable (the --set value when there is one).
func (l *layers) add(name, v string) {
	if sv, ok := l.spec.Set[name]; ok {
		v = sv
	}
	l.r.vars[name], l.envMap[name] = v, v
	l.r.env = append(l.r.env, name+"="+v)
	l.defined[name] = true
}

// value makes the value of an env entry (or a profile's): --set's, else
// the profile's, else the entry's own.
func (l *layers) value(e workflow.EnvVar) (string, error) {
	if v, ok := l.spec.Set[e.Name]; ok {
		return v, nil
	}
	if l.profile != nil {
		for _, p := range l.profile.Env {
			if p.Name == e.Name {
				e = p
			}
		}
	}
	switch {
	case e.From == nil:
		return e.Value.Expand(l.scope.PlainLookup(), interp.Plain)
	case e.From.Condition != nil:
		return conditional(e.From, l.scope, l.envMap)
	}
	if v, ok := l.spec.Cached[e.Name]; ok {
		return v, nil
	}
	v, err := envCommand(l.ctx, e.From.Command, slices.Concat(l.environ, l.r.env))
	if err == nil && e.From.Cache && !IsSecretName(l.wf, e.Name) {
		l.r.cached[e.Name] = v
	}
	return v, err
}

// secrets resolves the secrets mapping over the environment built so far.
func (l *layers) secrets() error {
	built := slices.Concat(l.environ, l.r.env)
	for _, s := range l.wf.SecretVars {
		v, ok := l.spec.Set[s.Name]
		if !ok {
			var err error
			if v, err = secretValue(l.wf, s, l.scope, built); err != nil {
				return fmt.Errorf("secrets.%s: %w", s.Name, err)
			}
		}
		l.r.vars[s.Name], l.envMap[s.Name] = v, v
		l.r.secrets = append(l.r.secrets, s.Name+"="+v)
	}
	return nil
}

// readEnvFiles adds the variables of wf's env_files, in order; lookup
// expands placeholders in their paths.
func (r *Env) readEnvFiles(wf *workflow.Workflow, lookup interp.Lookup, add func(name, v string)) error {
	for i, f := range wf.EnvFiles {
		path, err := f.Path.Expand(lookup, interp.Plain)
		if err != nil {
			return fmt.Errorf("env_files[%d]: %w", i, err)
		}
		path = besideWorkflow(wf, path)
		data, err := workflow.ReadNamedFile(path)
		if errors.Is(err, fs.ErrNotExist) && !f.Required {
			continue // an optional layer (.env.local) that is not there
		}
		if err != nil {
			return fmt.Errorf("env_files[%d]: %w", i, err)
		}
		vars, err := parseDotenv(data)
		if err != nil {
			return fmt.Errorf("env_files[%d]: %s:%w", i, path, err)
		}
		for _, kv := range vars {
			add(kv[0], kv[1])
		}
	}
	return nil
}

// besideWorkflow resolves a path written in wf: ~/ is the home directory,
// a relative path is relative to the workflow file's directory.
func besideWorkflow(wf *workflow.Workflow, path string) string {
	if rest, ok := strings.CutPrefix(path, "~/"); ok {
		if home, err := os.UserHomeDir(); err == nil {
			return filepath.Join(home, rest)
		}
	}
	if filepath.IsAbs(path) {
		return path
	}
	return filepath.Join(filepath.Dir(wf.File), path)
}

// conditional evaluates a {condition, when_true, when_false} value. The
// condition reads runner's variables, then env (${env.NAME}: the process
// environment too).
func conditional(src *workflow.EnvSource, sc *executor.Scope, env map[string]any) (string, error) {
	names := maps.Clone(env)
	maps.Copy(names, sc.Vars())
	ok, err := src.Condition.Bool(names)
	if err != nil {
		return "", fmt.Errorf("condition: %w", err)
	}
	if ok {
		return src.WhenTrue.Expand(sc.PlainLookup(), interp.Plain)
	}
	return src.WhenFalse.Expand(sc.PlainLookup(), interp.Plain)
}

// envCommand runs an env {command} with sh -c in this process's directory
// until it ends, CommandTimeout passes or ctx is done, and returns its
// stdout without trailing newlines.
func envCommand(ctx context.Context, command string, env []string) (string, error) {
	res := proc.Run(ctx, proc.Spec{Command: command, Env: env, Timeout: CommandTimeout, CaptureStdout: true})
	if res.Err != nil {
		if tail := strings.TrimSpace(string(res.StderrTail)); tail != "" {
			return "", fmt.Errorf("command %q failed: %w: %s", command, res.Err, tail[strings.LastIndexByte(tail, '\n')+1:]) // its last line
		}
		return "", fmt.Errorf("command %q failed: %w", command, res.Err)
	}
	return strings.TrimRight(string(res.Stdout), "\r\n"), nil
}

// secretValue resolves one entry of the secrets mapping; env is the
// environment built so far (a later entry wins).
func secretValue(wf *workflow.Workflow, s workflow.Secret, sc *executor.Scope, env []string) (string, error) {
	switch {
	case s.Value != nil:
		return s.Value.Expand(sc.PlainLookup(), interp.Plain)
	case s.Provider == workflow.SecretFromEnv:
		for i := len(env) - 1; i >= 0; i-- {
			if v, ok := strings.CutPrefix(env[i], s.Key+"="); ok {
				return v, nil
			}
		}
		return "", fmt.Errorf("environment variable %s is not set", s.Key)
	}
	data, err := workflow.ReadNamedFile(besideWorkflow(wf, s.Key))
	if err != nil {
		return "", fmt.Errorf("cannot read the secret file: %w", err)
	}
	return strings.TrimSuffix(strings.TrimSuffix(string(data), "\n"), "\r"), nil
}

// stepSecrets returns, as NAME=VALUE, the values of the steps' env
// entries (and agent.env's) whose names are secret, as far as they are
// known at job start (a value made from a capture is not), so that they
// are masked too.
func stepSecrets(wf *workflow.Workflow, sc *executor.Scope) []string {
	var out []string
	for _, s := range stepEnvSecrets(wf, sc.PlainLookup()) {
		out = append(out, s.name+"="+s.value)
	}
	return out
}

// idleProfileSecrets returns the values written in the profiles other
// than active whose names are secret.
func idleProfileSecrets(wf *workflow.Workflow, active string) []string {
	written := func(string) (any, bool) { return nil, false }
	var out []string
	for _, p := range wf.Profiles {
		if p.Name == active {
			continue
		}
		for _, e := range p.Env {
			if !IsSecretName(wf, e.Name) {
				continue
			}
			if v, err := e.Value.Expand(written, interp.Plain); err == nil {
				out = append(out, v)
			}
		}
	}
	return out
}

// Vars are the variables the environment defines, for ${NAME}; "env"
// (${env.NAME}) holds them and the process environment.
func (e *Env) Vars() map[string]any { return e.vars }

// Environ is NAME=VALUE of its variables, over the process environment
// (later entries winning), without the secrets.
func (e *Env) Environ() []string { return e.env }

// SecretEnv is NAME=VALUE of the secrets mapping.
func (e *Env) SecretEnv() []string { return e.secrets }

// Cached are the outputs of env commands with cache: true, but secrets,
// to keep with the job (Spec.Cached when it opens again).
func (e *Env) Cached() map[string]string { return e.cached }

// Check resolves what a job reads from its environment when it starts
// (env, durations given as $VAR), with --set values and the profile, so
// that a dry run reports a mistake there as a run would, and shows the
// durations the job would have.
func Check(ctx context.Context, wf *workflow.Workflow, set map[string]string, profile string) error {
	environ := os.Environ()
	env, err := Resolve(ctx, wf, Spec{Set: set, Profile: profile}, environ)
	if err != nil {
		return err
	}
	return wf.ResolveDurations(executor.NewScope(env.vars, environ).PlainLookup())
}
