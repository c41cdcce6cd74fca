package workflow

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

const envWorkflow = `env:
  NODE_ENV: production
  HOME_DIR: "home=${env:HOME}"
  WORKERS:
    command: "nproc || echo 4"
    cache: true
  DEPLOY_ENV:
    condition: "${branch} == 'main'"
    when_true: production
    when_false: staging
  API_TOKEN:
    secret: true
    value: "${GITHUB_TOKEN}"
secrets:
  API_KEY: "${env:SECRET_API_KEY}"
  DB_PASS: {provider: file, key: ~/db_pass}
  LITERAL: written-here
env_files:
  - .env
  - {path: .env.production, required: true}
profiles:
  development:
    description: local work
    NODE_ENV: development
    DEBUG: "true"
  testing: {}
commands:
  - shell: echo $NODE_ENV
`

// Every form of the environment keys is read into the workflow.
func TestParseEnvironment(t *testing.T) {
	wf, err := Parse("wf.yml", []byte(envWorkflow))
	if err != nil {
		t.Fatal(err)
	}
	names := func(vs []EnvVar) (out []string) {
		for _, v := range vs {
			out = append(out, v.Name)
		}
		return out
	}
	if got := names(wf.Env); !slices.Equal(got, []string{"NODE_ENV", "HOME_DIR", "WORKERS", "DEPLOY_ENV", "API_TOKEN"}) {
		t.Fatalf("env %v", got)
	}
	if e := wf.Env[0]; e.From != nil || e.Value.String() != "production" {
		t.Errorf("static %+v", e)
	}
	if e := wf.Env[1]; e.Value.String() != "home=${env.HOME}" {
		t.Errorf("${env:NAME} is ${env.NAME}: %q", e.Value)
	}
	wf.Env = slices.Delete(wf.Env, 1, 2)
	if f := wf.Env[1].From; f == nil || f.Command != "nproc || echo 4" || !f.Cache || wf.Env[1].Value != nil {
		t.Errorf("command %+v", wf.Env[1])
	}
	if f := wf.Env[2].From; f == nil || f.Condition == nil || f.WhenTrue.String() != "production" || f.WhenFalse.String() != "staging" {
		t.Errorf("condition %+v", wf.Env[2])
	}
	if e := wf.Env[3]; e.From != nil || e.Value.String() != "${GITHUB_TOKEN}" {
		t.Errorf("secret value %+v", e)
	}
	if want := []string{"API_TOKEN", "API_KEY", "DB_PASS", "LITERAL"}; !slices.Equal(wf.Secrets, want) {
		t.Errorf("secret names %v, want %v", wf.Secrets, want)
	}
	s := wf.SecretVars
	switch {
	case len(s) != 3:
		t.Fatalf("secrets %+v", s)
	case s[0] != Secret{Name: "API_KEY", Provider: SecretFromEnv, Key: "SECRET_API_KEY"}:
		t.Errorf("env reference %+v", s[0])
	case s[1] != Secret{Name: "DB_PASS", Provider: SecretFromFile, Key: "~/db_pass"}:
		t.Errorf("file reference %+v", s[1])
	case s[2].Value == nil || s[2].Value.String() != "written-here" || s[2].Provider != "":
		t.Errorf("value %+v", s[2])
	}
	if f := wf.EnvFiles; len(f) != 2 || f[0].Path.String() != ".env" || f[0].Required || f[1].Path.String() != ".env.production" || !f[1].Required {
		t.Errorf("env_files %+v", f)
	}
	p, err := wf.Profile("development")
	if err != nil || p.Description != "local work" || !slices.Equal(names(p.Env), []string{"NODE_ENV", "DEBUG"}) {
		t.Errorf("profile %+v, %v", p, err)
	}
	if p, err := wf.Profile("testing"); err != nil || len(p.Env) != 0 {
		t.Errorf("empty profile %+v, %v", p, err)
	}
}

// A profile --profile names that the workflow lacks is an error at its
// profiles: key, naming the ones it has.
func TestProfileNotFound(t *testing.T) {
	wf, err := Parse("wf.yml", []byte(envWorkflow))
	if err != nil {
		t.Fatal(err)
	}
	_, err = wf.Profile("production")
	var pe *ParseError
	if !errors.As(err, &pe) || pe.Error() != `wf.yml:21:1: profile "production" not found: profiles: defines development, testing` {
		t.Errorf("error %v", err)
	}
	wf, err = Parse("bare.yml", []byte("- shell: x\n"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err = wf.Profile("dev"); err == nil || err.Error() != `bare.yml: profile "dev" not found: the workflow defines no profiles:` {
		t.Errorf("no profiles: error %v", err)
	}
}

func TestParseEnvironmentErrors(t *testing.T) {
	tests := []struct {
		name, src string
		want      string // "LINE:COL: message"
	}{
		{"value and command", "env:\n  X: {value: a, command: b}\ncommands: [{shell: x}]\n", `2:17: env.X: value and command are two ways to give the value; write one`},
		{"no form", "env:\n  X: {secret: true}\ncommands: [{shell: x}]\n", `2:6: env.X needs one of value, command (its output) or condition (with when_true and when_false)`},
		{"cache without command", "env:\n  X: {value: a, cache: true}\ncommands: [{shell: x}]\n", `2:17: env.X: cache goes with command, not with value`},
		{"when_true without condition", "env:\n  X: {command: a, when_true: b}\ncommands: [{shell: x}]\n", `2:19: env.X: when_true goes with condition, not with command`},
		{"condition without when_false", "env:\n  X: {condition: 'true', when_true: b}\ncommands: [{shell: x}]\n", `2:7: env.X: condition needs both when_true and when_false (when_false is missing)`},
		{"bad condition", "env:\n  X: {condition: 'a ==', when_true: b, when_false: c}\ncommands: [{shell: x}]\n", `2:22: env.X.condition: invalid expression "a =="`},
		{"empty command", "env:\n  X: {command: ' '}\ncommands: [{shell: x}]\n", `2:16: env.X.command is empty`},
		{"unknown key", "env:\n  X: {value: a, secrte: true}\ncommands: [{shell: x}]\n", `2:17: unknown key "secrte" in env.X (did you mean "secret"?)`},
		{"secret not boolean", "env:\n  X: {value: a, secret: yes please}\ncommands: [{shell: x}]\n", `2:25: env.X.secret must be true or false`},
		{"unknown provider", "secrets:\n  X: {provider: vault, key: a/b}\ncommands: [{shell: x}]\n", `2:17: secrets.X: provider "vault" is not supported: runner reads secrets from env (a variable) or file (a file's content)`},
		{"reference without key", "secrets:\n  X: {provider: env}\ncommands: [{shell: x}]\n", `2:6: secrets.X needs key (a reference is {provider: env or file, key: NAME or PATH})`},
		{"env key not a name", "secrets:\n  X: {provider: env, key: 'A-B'}\ncommands: [{shell: x}]\n", `2:27: secrets.X.key: "A-B" is not a valid variable name`},
		{"secret bad name", "secrets:\n  9X: a\ncommands: [{shell: x}]\n", `2:3: secrets: "9X" is not a valid variable name`},
		{"env_files not a list", "env_files: .env\ncommands: [{shell: x}]\n", `1:12: env_files must be a list`},
		{"env_files without path", "env_files: [{required: true}]\ncommands: [{shell: x}]\n", `1:13: env_files[0] needs path`},
		{"env_files empty path", "env_files: ['']\ncommands: [{shell: x}]\n", `1:13: env_files[0]: the path is empty`},
		{"profile not a mapping", "profiles:\n  dev: x\ncommands: [{shell: x}]\n", `2:8: profiles.dev must be a mapping of NAME: value (and description), not "x"`},
		{"profile value mapping", "profiles:\n  dev:\n    X: {command: a}\ncommands: [{shell: x}]\n", `3:8: profiles.dev.X must be a string, number or boolean, not a mapping`},
		{"profile bad name", "profiles:\n  dev:\n    9X: a\ncommands: [{shell: x}]\n", `3:5: profiles.dev: "9X" is not a valid variable name`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			errs := parseErr(t, "x.yml", tt.src)
			if len(errs) != 1 || !strings.HasPrefix(errs[0], tt.want) {
				t.Errorf("errors %q, want one starting %q", errs, tt.want)
			}
		})
	}
}
