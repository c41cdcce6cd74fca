package executor

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/theory/jsonpath"

	"github.com/runnerdev/runner/internal/proc"
	"github.com/runnerdev/runner/workflow/interp"
)

// commandVarTimeout bounds a ${cmd:COMMAND}: it runs before the step, out
// of reach of the step's own timeout.
const commandVarTimeout = 5 * time.Minute

// where is what a scope's computed variables need: the directory that
// ${file:PATH} and ${cmd:COMMAND} are relative to, the environment and
// context of a command, and the mask of its error messages.
type where struct {
	ctx  context.Context
	dir  string
	env  []string
	mask func(string) string
}

// in returns sc reading its computed variables from dir, running commands
// with env under ctx; values are read, not copied, so sc and the result
// see the same variables.
func (s *Scope) in(ctx context.Context, dir string, env []string, mask func(string) string) *Scope {
	c := *s
	c.at = &where{ctx: ctx, dir: dir, env: env, mask: mask}
	return &c
}

// Under returns sc running the commands of its computed variables under
// ctx, so that they end with it, wherever else it reads them; like in, it
// shares sc's variables.
func (s *Scope) Under(ctx context.Context) *Scope {
	at := where{ctx: ctx}
	if s.at != nil {
		at = *s.at
		at.ctx = ctx
	}
	c := *s
	c.at = &at
	return &c
}

// computed resolves the variables runner works out when they are read,
// as Prodigy's book has them (variables.rs): ${file:PATH},
// ${cmd:COMMAND}, ${json:PATH:from:VAR}, ${date:FORMAT} (interp makes
// ${uuid}). A value
// that cannot be worked out is Unavailable, with the reason.
func (s *Scope) computed(path string, own interp.Lookup) (any, bool) {
	kind, arg, ok := interp.Computed(path)
	if !ok {
		return nil, false
	}
	v, err := s.compute(kind, arg, own)
	if err != nil {
		msg := err.Error()
		if s.at != nil && s.at.mask != nil {
			msg = s.at.mask(msg)
		}
		return interp.Unavailable{Reason: msg}, true
	}
	return v, true
}

// compute works out a computed variable of kind with its argument.
func (s *Scope) compute(kind, arg string, own interp.Lookup) (any, error) {
	switch kind {
	case "file":
		data, err := os.ReadFile(s.path(arg))
		if err != nil {
			return nil, err
		}
		return strings.TrimRight(string(data), "\r\n"), nil
	case "cmd":
		return s.command(arg)
	case "json":
		return jsonVar(arg, own)
	}
	return strftime(time.Now(), arg), nil
}

// path is a ${file:PATH}'s file: relative to the step's directory.
func (s *Scope) path(p string) string {
	if s.at == nil || filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(s.at.dir, p)
}

// command runs a ${cmd:COMMAND} with sh and returns its stdout, trailing
// newlines trimmed; a command that fails is an error with its stderr's end.
// A scope that nobody put under a context (in, Under) is one read before
// its job has one: a job's environment as it starts.
func (s *Scope) command(text string) (string, error) {
	ctx, dir, env := context.Background(), "", []string(nil)
	if s.at != nil {
		ctx, dir, env = s.at.ctx, s.at.dir, s.at.env
	}
	if env == nil {
		for k, v := range s.environ {
			env = append(env, k+"="+v)
		}
	}
	res := proc.Run(ctx, proc.Spec{Command: text, Dir: dir, Env: env, Timeout: commandVarTimeout, CaptureStdout: true, DieWithParent: true})
	if res.Kind != proc.KindOK {
		return "", fmt.Errorf("%v: %s", res.Err, strings.TrimSpace(string(res.StderrTail)))
	}
	return strings.TrimRight(string(res.Stdout), "\r\n"), nil
}

// jsonVar is ${json:PATH:from:VAR}: the first value the JSONPath PATH
// selects in the variable VAR (a JSON capture, or a text holding JSON).
func jsonVar(arg string, own interp.Lookup) (any, error) {
	expr, name, ok := cutLast(arg, ":from:")
	if !ok {
		return nil, fmt.Errorf("want ${json:PATH:from:VARIABLE}")
	}
	p, err := jsonpath.Parse(expr)
	if err != nil {
		return nil, err
	}
	v, ok := own(name)
	if !ok {
		return nil, fmt.Errorf("no variable %s", name)
	}
	if text, isText := v.(string); isText {
		if err := json.Unmarshal([]byte(text), &v); err != nil {
			return nil, fmt.Errorf("%s does not hold JSON: %w", name, err)
		}
	}
	found := p.Select(v)
	if len(found) == 0 {
		return nil, fmt.Errorf("%s selects nothing in %s", expr, name)
	}
	return found[0], nil
}

// cutLast cuts s around the last sep.
func cutLast(s, sep string) (before, after string, ok bool) {
	i := strings.LastIndex(s, sep)
	if i < 0 {
		return s, "", false
	}
	return s[:i], s[i+len(sep):], true
}
