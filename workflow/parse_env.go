package workflow

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"

	"gopkg.in/yaml.v3"
)

// environment reads the top-level keys that make a job's environment: env,
// secrets, env_files and profiles.
func (d *decoder) environment(f *fields, wf *Workflow) {
	wf.Env = d.workflowEnv(f.get("env"), wf)
	if n := f.get("secrets"); n != nil {
		d.secrets(n, wf)
	}
	if n := f.get("env_files"); n != nil {
		wf.EnvFiles = d.envFiles(n)
	}
	if n := f.get("profiles"); n != nil {
		wf.profilesAt = pos(f.key("profiles"))
		wf.Profiles = d.profiles(n)
	}
}

// envValueKeys are the keys of a workflow env variable written as a
// mapping: {value, secret}, {command, cache} or {condition, when_true,
// when_false}; secret goes with any of them. {default} alone is a
// variable declared in some of Prodigy's files: its default is taken.
var envValueKeys = []string{"value", "secret", "command", "cache", "condition", "when_true", "when_false", "default"}

// workflowEnv reads the workflow env, whose values may also be mappings;
// names marked secret: true are added to wf.Secrets.
func (d *decoder) workflowEnv(n *yaml.Node, wf *Workflow) []EnvVar {
	var out []EnvVar
	for _, e := range d.envEntries(n, "env") {
		name, what := e.key.Value, "env."+e.key.Value
		v := d.resolve(e.val)
		if v == nil || v.Kind != yaml.MappingNode {
			if t := d.envValue(e.val, what); t != nil {
				out = append(out, EnvVar{Name: name, Value: t, Pos: pos(e.key)})
			}
			continue
		}
		f := d.mapping(v, what, envValueKeys)
		if f == nil {
			continue
		}
		if s := f.get("secret"); s != nil {
			if secret, _ := d.boolean(s, what+".secret"); secret {
				wf.Secrets = append(wf.Secrets, name)
			}
		}
		if ev, ok := d.envForm(f, v, what); ok {
			ev.Name, ev.Pos = name, pos(e.key)
			out = append(out, ev)
		}
	}
	return out
}

// envForm reads the one form a mapping env value is written in.
func (d *decoder) envForm(f *fields, v *yaml.Node, what string) (EnvVar, bool) {
	var forms []string
	for _, k := range []string{"value", "command", "condition"} {
		if f.has(k) {
			forms = append(forms, k)
		}
	}
	switch {
	case len(forms) == 0 && f.has("default"):
		// A variable's declaration ({default, description}) in some of
		// Prodigy's files, whose env holds strings: runner takes the default.
		d.warnf(f.key("default"), "%s: a mapping with default: is not an env form; runner sets the variable to its default (for the value, write value:)", what)
		t := d.envValue(f.vals["default"], what+".default")
		return EnvVar{Value: t}, t != nil
	case len(forms) == 0:
		d.errorf(v, "%s needs one of value, command (its output) or condition (with when_true and when_false)", what)
		return EnvVar{}, false
	case len(forms) > 1:
		d.errorf(f.key(forms[1]), "%s: %s and %s are two ways to give the value; write one", what, forms[0], forms[1])
		return EnvVar{}, false
	}
	d.onlyWith(f, what, forms[0], "cache", "command")
	d.onlyWith(f, what, forms[0], "when_true", "condition")
	d.onlyWith(f, what, forms[0], "when_false", "condition")
	switch forms[0] {
	case "value":
		t := d.envValue(f.vals["value"], what+".value")
		return EnvVar{Value: t}, t != nil
	case "command":
		src := &EnvSource{}
		cmd, ok := d.str(f.vals["command"], what+".command")
		if ok && strings.TrimSpace(cmd) == "" {
			d.errorf(f.vals["command"], "%s.command is empty", what)
			ok = false
		}
		src.Command = cmd
		if c := f.get("cache"); c != nil {
			src.Cache, _ = d.boolean(c, what+".cache")
		}
		return EnvVar{From: src}, ok
	}
	src := &EnvSource{Condition: d.condition(f.vals["condition"], what+".condition")}
	for _, k := range []string{"when_true", "when_false"} {
		if !f.has(k) {
			d.errorf(f.key("condition"), "%s: condition needs both when_true and when_false (%s is missing)", what, k)
			return EnvVar{}, false
		}
	}
	src.WhenTrue = d.envValue(f.vals["when_true"], what+".when_true")
	src.WhenFalse = d.envValue(f.vals["when_false"], what+".when_false")
	return EnvVar{From: src}, src.Condition != nil && src.WhenTrue != nil && src.WhenFalse != nil
}

// onlyWith reports key written beside a form other than the one it goes
// with.
func (d *decoder) onlyWith(f *fields, what, form, key, with string) {
	if f.has(key) && form != with {
		d.errorf(f.key(key), "%s: %s goes with %s, not with %s", what, key, with, form)
	}
}

// envRef is a secret written as a reference to an environment variable;
// envColon is that reference anywhere in a value.
var (
	envRef   = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^\$\{env:([A-Za-z_][A-Za-z0-9_]*)\}$`) })
	envColon = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\$\{env:([A-Za-z_][A-Za-z0-9_]*)\}`) })
)

var secretRefKeys = []string{"provider", "key"}

// secrets reads `secrets:`: a list of variable names whose values are
// masked, or a mapping that also defines them, each NAME: a value, a
// reference "${env:VAR}", or {provider: env|file, key}.
func (d *decoder) secrets(n *yaml.Node, wf *Workflow) {
	if r := d.resolve(n); r != nil && r.Kind == yaml.MappingNode {
		for _, e := range d.envEntries(r, "secrets") {
			name := e.key.Value
			wf.Secrets = append(wf.Secrets, name)
			if s, ok := d.secret(e.val, "secrets."+name); ok {
				s.Name = name
				wf.SecretVars = append(wf.SecretVars, s)
			}
		}
		return
	}
	items, ok := d.list(n, "secrets")
	if !ok {
		return
	}
	for _, it := range items {
		if s, ok := d.str(it, "secrets"); ok {
			wf.Secrets = append(wf.Secrets, s)
			wf.EnvSecrets = append(wf.EnvSecrets, s)
		}
	}
}

// secret reads one secret's value or reference.
func (d *decoder) secret(n *yaml.Node, what string) (Secret, bool) {
	v := d.resolve(n)
	if v != nil && v.Kind == yaml.ScalarNode {
		if m := envRef().FindStringSubmatch(v.Value); m != nil {
			return Secret{Provider: SecretFromEnv, Key: m[1]}, true
		}
	}
	if v == nil || v.Kind != yaml.MappingNode {
		t := d.envValue(n, what)
		return Secret{Value: t}, t != nil
	}
	f := d.mapping(v, what, secretRefKeys)
	if f == nil {
		return Secret{}, false
	}
	var s Secret
	ok := true
	for _, k := range secretRefKeys {
		if f.get(k) == nil {
			d.errorf(v, "%s needs %s (a reference is {provider: env or file, key: NAME or PATH})", what, k)
			ok = false
		}
	}
	if !ok {
		return s, false
	}
	p, ok := d.str(f.vals["provider"], what+".provider")
	if ok && p != string(SecretFromEnv) && p != string(SecretFromFile) {
		d.errorf(f.vals["provider"], "%s: provider %q is not supported: runner reads secrets from env (a variable) or file (a file's content)", what, p)
		ok = false
	}
	s.Provider = SecretProvider(p)
	key, keyOK := d.str(f.vals["key"], what+".key")
	if keyOK && s.Provider == SecretFromEnv && !envName().MatchString(key) {
		d.errorf(f.vals["key"], "%s.key: %q is not a valid variable name", what, key)
		keyOK = false
	}
	s.Key = key
	return s, ok && keyOK
}

var envFileKeys = []string{"path", "required"}

// envFiles reads env_files: paths, or {path, required}.
func (d *decoder) envFiles(n *yaml.Node) []EnvFile {
	items, _ := d.list(n, "env_files")
	var out []EnvFile
	for i, it := range items {
		what := fmt.Sprintf("env_files[%d]", i)
		v := d.resolve(it)
		if v == nil {
			continue
		}
		var ef EnvFile
		pathNode := it
		if v.Kind == yaml.MappingNode {
			f := d.mapping(v, what, envFileKeys)
			if f == nil {
				continue
			}
			if pathNode = f.get("path"); pathNode == nil {
				d.errorf(v, "%s needs path", what)
				continue
			}
			if r := f.get("required"); r != nil {
				ef.Required, _ = d.boolean(r, what+".required")
			}
		}
		if p := d.resolve(pathNode); p != nil && p.Kind == yaml.ScalarNode && strings.TrimSpace(p.Value) == "" {
			d.errorf(p, "%s: the path is empty", what)
			continue
		}
		if ef.Path = d.envValue(pathNode, what); ef.Path != nil {
			out = append(out, ef)
		}
	}
	return out
}

// profiles reads profiles: NAME: {description, VAR: value, ...}.
func (d *decoder) profiles(n *yaml.Node) []Profile {
	m := d.mappingNode(n, "profiles", "a mapping of profile names to variables")
	if m == nil {
		return nil
	}
	es, _ := d.entries(m, "profiles")
	var out []Profile
	for _, e := range es {
		p := Profile{Name: e.key.Value}
		what := "profiles." + p.Name
		vars := d.mappingNode(e.val, what, "a mapping of NAME: value (and description)")
		if vars == nil {
			continue
		}
		// description is the profile's label, not a variable: read it
		// apart and the rest as env.
		rest := &yaml.Node{Kind: yaml.MappingNode, Line: vars.Line, Column: vars.Column}
		for i := 0; i+1 < len(vars.Content); i += 2 {
			if k := vars.Content[i]; k.Value == "description" {
				p.Description, _ = d.str(vars.Content[i+1], what+".description")
				continue
			}
			rest.Content = append(rest.Content, vars.Content[i], vars.Content[i+1])
		}
		p.Env = d.envVars(rest, what)
		out = append(out, p)
	}
	return slices.Clip(out)
}

// stepEnvFlags reads a step's clear_env and temporary. temporary (restore
// the environment after the step) is accepted as it changes nothing: a
// step's env only ever applies to that step.
func (d *decoder) stepEnvFlags(f *fields, s *Step) {
	if n := f.get("clear_env"); n != nil {
		s.ClearEnv, _ = d.boolean(n, "clear_env")
	}
	if n := f.get("temporary"); n != nil {
		d.boolean(n, "temporary")
	}
}
