package executor

import (
	"maps"
	"strings"

	"github.com/runnerdev/runner/workflow"
	"github.com/runnerdev/runner/workflow/interp"
)

// Scope holds the variables a step can read: workflow env, captures,
// ${steps.ID.*}, and (in map agents) the item. Values are strings, numbers,
// booleans, nil, []any and map[string]any.
type Scope struct {
	vars    map[string]any
	environ map[string]string // the process environment, for Plain expansion
	aliases map[string]string // path -> the path it reads (item.item -> item)
	at      *where            // where computed variables are worked out; nil: here
}

// NewScope starts a scope with the given variables and process environment.
func NewScope(vars map[string]any, environ []string) *Scope {
	env := make(map[string]string, len(environ))
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok {
			env[k] = v
		}
	}
	if vars == nil {
		vars = map[string]any{}
	}
	return &Scope{vars: vars, environ: env}
}

// Child returns a copy whose top-level variables can change without
// touching s (nested maps are shared; set them through Set only).
func (s *Scope) Child() *Scope {
	return &Scope{vars: maps.Clone(s.vars), environ: s.environ, aliases: maps.Clone(s.aliases), at: s.at}
}

// Alias makes placeholders of path read target instead (Prodigy's
// ${item.item} for a plain-line item).
func (s *Scope) Alias(path, target string) {
	if s.aliases == nil {
		s.aliases = map[string]string{}
	}
	s.aliases[path] = target
}

// Set defines a top-level variable.
func (s *Scope) Set(name string, v any) { s.vars[name] = v }

// SetIn defines key inside the top-level map ns ("steps", "shell", ...),
// copying that map so that children made earlier are not affected.
func (s *Scope) SetIn(ns, key string, v any) {
	old, _ := s.vars[ns].(map[string]any)
	m := maps.Clone(old)
	if m == nil {
		m = map[string]any{}
	}
	m[key] = v
	s.vars[ns] = m
}

// Vars returns the variables, for expressions. Do not modify it.
func (s *Scope) Vars() map[string]any { return s.vars }

// Lookup resolves paths for Shell expansion: only runner's own variables,
// the computed ones (${file:PATH}, ${uuid}...) included.
// Prodigy's short spellings resolve when the path itself does not:
// ${NAME.exit_code} (and success, duration, stderr, commits) reads the
// metadata of the capture NAME, so a JSON capture's own field of that name
// wins; ${ID.output} reads ${steps.ID.output}.
func (s *Scope) Lookup() interp.Lookup {
	own := interp.MapLookup(s.vars)
	return func(path string) (any, bool) {
		if target, ok := s.aliases[path]; ok {
			path = target
		}
		if v, ok := own(path); ok {
			return v, true
		}
		if v, ok := s.computed(path, own); ok {
			return v, true
		}
		if !strings.ContainsAny(path, ".[") {
			return nil, false
		}
		if v, ok := own(workflow.CaptureMetaVar + "." + path); ok {
			return v, true
		}
		return own("steps." + path)
	}
}

// PlainLookup also resolves plain names from the process environment, for
// values that no shell will expand later (env values, working_dir).
func (s *Scope) PlainLookup() interp.Lookup {
	own := s.Lookup()
	return func(path string) (any, bool) {
		if v, ok := own(path); ok {
			return v, true
		}
		v, ok := s.environ[path]
		return v, ok
	}
}
