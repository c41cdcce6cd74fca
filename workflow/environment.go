package workflow

import (
	"fmt"
	"slices"
	"strings"

	"github.com/runnerdev/runner/workflow/interp"
)

// EnvSource is how a workflow env variable is given a value at job start
// when it is not written as one: a command's output, or one of two values
// chosen by a condition.
type EnvSource struct {
	Command string // {command, cache}: run by sh -c; its stdout, trailing newlines trimmed
	// Cache keeps the command's output with the job: resume, dlq retry and
	// agent processes use it instead of running the command again.
	Cache bool

	Condition           *Expr // {condition, when_true, when_false}
	WhenTrue, WhenFalse *interp.Template
}

// EnvFile is one entry of env_files: a dotenv file read at job start.
type EnvFile struct {
	Path     *interp.Template // relative to the workflow file's directory
	Required bool             // a missing file is an error; otherwise it is skipped
}

// Profile is a named set of variables that runner run --profile NAME
// applies over the workflow env.
type Profile struct {
	Name        string
	Description string
	Env         []EnvVar
}

// SecretProvider says where a secret reference is looked up.
type SecretProvider string

// Secret providers.
const (
	SecretFromEnv  SecretProvider = "env"  // an environment variable: "${env:NAME}" or {provider: env, key: NAME}
	SecretFromFile SecretProvider = "file" // a file's content: {provider: file, key: PATH}
)

// Secret is one entry of the secrets mapping: a value written in the
// workflow, or a reference resolved at job start.
type Secret struct {
	Name     string
	Value    *interp.Template // written in the workflow; nil for a reference
	Provider SecretProvider
	Key      string // the variable's name or the file's path
}

// Profile returns the profile called name. A name the workflow does not
// define is a ParseError at its profiles: key (the file, when it has none).
func (wf *Workflow) Profile(name string) (*Profile, error) {
	i := slices.IndexFunc(wf.Profiles, func(p Profile) bool { return p.Name == name })
	if i >= 0 {
		return &wf.Profiles[i], nil
	}
	e := &ParseError{File: wf.File, Pos: wf.profilesAt}
	if len(wf.Profiles) == 0 {
		e.Msg = fmt.Sprintf("profile %q not found: the workflow defines no profiles:", name)
		return nil, e
	}
	names := make([]string, len(wf.Profiles))
	for i, p := range wf.Profiles {
		names[i] = p.Name
	}
	e.Msg = fmt.Sprintf("profile %q not found: profiles: defines %s", name, strings.Join(names, ", "))
	return nil, e
}
