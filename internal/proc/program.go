package proc

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// errNotFound is the cause of a KindSpawn result whose program (Spec.Args)
// is in no directory of the PATH.
var errNotFound = errors.New("not found in PATH")

// defaultPath is where sh looks for programs when the environment has no
// PATH (dash's built-in default), so that both forms of Spec find the same
// program.
const defaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// launch is what the child executes: the file, its argv and environment,
// and the temporary script file of a long command (removed after the run).
type launch struct {
	path      string
	argv, env []string
	script    string
}

// program returns what to execute: the shell with Command (or, for a long
// Command, with a temporary script file that the caller removes), or Args
// run directly.
func (s *Spec) program() (launch, error) {
	if s.Args == nil {
		if len(s.Command) <= maxInlineScript {
			return launch{path: shellPath, argv: []string{shellPath, "-c", s.Command}, env: s.Env}, nil
		}
		script, err := scriptFile(s.Command)
		if err != nil {
			return launch{}, err
		}
		return launch{path: shellPath, argv: []string{shellPath, script}, env: s.Env, script: script}, nil
	}
	switch {
	case s.Command != "":
		return launch{}, errors.New("a Spec sets Command or Args, not both")
	case len(s.Args) == 0 || s.Args[0] == "":
		return launch{}, errors.New("no program to run (Args is empty)")
	}
	path, err := lookPath(s.Args[0], s.Env, s.Dir)
	return launch{path: path, argv: s.Args, env: lastWins(s.Env)}, err
}

// lastWins drops the entries of env that a later entry of the same name
// overrides. sh does this for the commands it runs; a program run directly
// would otherwise see the first entry (getenv returns the first match).
func lastWins(env []string) []string {
	seen := make(map[string]bool, len(env))
	out := make([]string, 0, len(env))
	for i := len(env) - 1; i >= 0; i-- {
		name, _, _ := strings.Cut(env[i], "=")
		if !seen[name] {
			seen[name] = true
			out = append(out, env[i])
		}
	}
	slices.Reverse(out)
	return out
}

// lookPath finds a program as sh does: a name with a slash is a path;
// any other name is searched in the PATH of env, the environment the
// program gets, not runner's own. The path it returns is spelt as sh
// spells it (a script sees it as $0) and, when relative, is relative to
// dir, where the child starts before it executes the program.
func lookPath(name string, env []string, dir string) (string, error) {
	if strings.Contains(name, "/") {
		return name, nil // ForkExec reports a missing or unrunnable file
	}
	for _, d := range filepath.SplitList(pathOf(env)) {
		p := name // an empty entry is the current directory
		if d != "" {
			p = d + "/" + name // as sh spells it: a script's $0
		}
		if fi, err := os.Stat(inDir(dir, p)); err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("%q: %w", name, errNotFound)
}

// pathOf is the PATH of env (the last entry wins, as later entries
// override earlier ones), or sh's default when it has none.
func pathOf(env []string) string {
	for i := len(env) - 1; i >= 0; i-- {
		if p, ok := strings.CutPrefix(env[i], "PATH="); ok {
			return p
		}
	}
	return defaultPath
}

// inDir makes a relative path relative to dir ("" is the current
// directory).
func inDir(dir, path string) string {
	if dir == "" || filepath.IsAbs(path) {
		return path
	}
	return filepath.Join(dir, path)
}

// direct returns how to run Command without the shell when it is a plain
// list of words whose program is in the PATH (nil otherwise: the shell
// runs it, and reports a program it cannot find). A PATH entry with % is
// one that dash reads its own way.
func (s *Spec) direct() *launch {
	if s.Args != nil || s.Shell || !shellIsDash() {
		return nil
	}
	argv := Words(s.Command)
	if argv == nil || strings.ContainsRune(pathOf(s.Env), '%') {
		return nil
	}
	path, err := lookPath(argv[0], s.Env, s.Dir)
	if err != nil {
		return nil
	}
	return &launch{path: path, argv: argv, env: dashEnv(s.Env, s.Dir)}
}
