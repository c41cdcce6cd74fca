package jobenv

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/runnerdev/runner/internal/testkit"
	"github.com/runnerdev/runner/workflow"
)

// envWorkflow parses src as dir/wf.yml after writing files into dir.
func envWorkflow(t *testing.T, src string, files map[string]string) *workflow.Workflow {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	path := filepath.Join(dir, "wf.yml")
	wf, err := workflow.Parse(path, []byte(src+"commands: [{shell: x}]\n"))
	if err != nil {
		t.Fatal(err)
	}
	return wf
}

// effective is the value a command of the job sees for name, without
// step env: the process environment, then the workflow's layers, then
// the secrets.
func effective(environ []string, r *Env, name string) string {
	v := ""
	for _, kv := range append(append(append([]string{}, environ...), r.env...), r.secrets...) {
		if rest, ok := strings.CutPrefix(kv, name+"="); ok {
			v = rest
		}
	}
	return v
}

// Each source of V overrides the ones before it, in the order of
// prodigy-docs/environment_environment-precedence.md: the process
// environment, env files (a later one over an earlier one), env, the
// active profile, then the secrets; --set, given for one run, wins over
// all of them.
func TestEnvPrecedence(t *testing.T) {
	const (
		files   = "env_files: [a.env, b.env]\n"
		env     = "env: {V: env}\n"
		profile = "profiles: {dev: {V: profile}, other: {W: x}}\n"
		secret  = "secrets: {V: secret}\n"
	)
	tests := []struct {
		name, src   string
		a, b        string // the two env files' V, "" = not there
		profile     string
		set         map[string]string
		want        string
		wantSecrets bool
	}{
		{name: "process environment", src: "", want: "parent"},
		{name: "--set over the process environment", src: "", set: map[string]string{"V": "set"}, want: "set"},
		{name: "env file over the process", src: files, a: "a", want: "a"},
		{name: "later env file over earlier", src: files, a: "a", b: "b", want: "b"},
		{name: "env over env files", src: files + env, a: "a", b: "b", want: "env"},
		{name: "active profile over env", src: files + env + profile, b: "b", profile: "dev", want: "profile"},
		{name: "profile without V leaves env", src: env + profile, profile: "other", want: "env"},
		{name: "profile defines a variable env lacks", src: profile, profile: "dev", want: "profile"},
		{name: "--set over the profile", src: env + profile, profile: "dev", set: map[string]string{"V": "set"}, want: "set"},
		{name: "secret over env and profile", src: env + profile + secret, profile: "dev", want: "secret", wantSecrets: true},
		{name: "--set over a secret", src: env + secret, set: map[string]string{"V": "set"}, want: "set", wantSecrets: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := map[string]string{}
			if tt.a != "" {
				fs["a.env"] = "V=" + tt.a + "\n"
			}
			if tt.b != "" {
				fs["b.env"] = "V=" + tt.b + "\n"
			}
			wf := envWorkflow(t, tt.src, fs)
			environ := []string{"V=parent", "PATH=" + os.Getenv("PATH")}
			r, err := Resolve(t.Context(), wf, Spec{Set: tt.set, Profile: tt.profile}, environ)
			if err != nil {
				t.Fatal(err)
			}
			if got := effective(environ, r, "V"); got != tt.want {
				t.Errorf("V = %q, want %q", got, tt.want)
			}
			if got := r.vars["V"]; tt.want != "parent" && got != tt.want {
				t.Errorf("${V} = %v, want %q", got, tt.want)
			}
			if got := len(r.secrets) > 0; got != tt.wantSecrets {
				t.Errorf("secrets layer %q", r.secrets)
			}
		})
	}
}

// A profile or --set value replaces an env entry where it stands: the
// entries after it see it, and the entry's command is not run.
func TestEnvOverrideWhereItStands(t *testing.T) {
	wf := envWorkflow(t, "env:\n  REGION: eu\n  CMD: {command: 'exit 1'}\n  URL: 'https://${REGION}.example'\nprofiles: {us: {REGION: us}}\n", nil)
	r, err := Resolve(t.Context(), wf, Spec{Profile: "us", Set: map[string]string{"CMD": "given"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := r.vars["URL"]; got != "https://us.example" {
		t.Errorf("URL = %v, want the profile's region", got)
	}
	if got := r.vars["CMD"]; got != "given" {
		t.Errorf("CMD = %v", got)
	}
}

// A command runs with sh -c and sees the variables before it; with
// cache: true its output is kept (but a secret's), and a process given the
// kept outputs does not run it again; without cache it runs again.
func TestEnvCommandCache(t *testing.T) {
	dir := t.TempDir()
	count := filepath.Join(dir, "runs")
	wf := envWorkflow(t, `env:
  PREFIX: w
  CACHED: {command: 'echo run >> `+count+`; echo "$PREFIX-1"', cache: true}
  FRESH: {command: 'echo run >> `+count+`; printf "fresh\n\n"'}
  GH_TOKEN: {command: 'echo run >> `+count+`; echo tok-123456', cache: true}
`, nil)
	runs := func() int {
		data, _ := os.ReadFile(count)
		return strings.Count(string(data), "run")
	}
	environ := []string{"PATH=" + os.Getenv("PATH")}
	first, err := Resolve(t.Context(), wf, Spec{}, environ)
	if err != nil {
		t.Fatal(err)
	}
	if got := []any{first.vars["CACHED"], first.vars["FRESH"], first.vars["GH_TOKEN"]}; !reflect.DeepEqual(got, []any{"w-1", "fresh", "tok-123456"}) {
		t.Errorf("values %q", got)
	}
	if want := map[string]string{"CACHED": "w-1"}; !reflect.DeepEqual(first.cached, want) {
		t.Errorf("kept %v, want %v (no secret)", first.cached, want)
	}
	if runs() != 3 {
		t.Fatalf("%d runs, want 3", runs())
	}
	again, err := Resolve(t.Context(), wf, Spec{Cached: first.cached}, environ)
	if err != nil {
		t.Fatal(err)
	}
	if runs() != 5 || again.vars["CACHED"] != "w-1" {
		t.Errorf("with the kept outputs: %d runs, want 5 (FRESH and GH_TOKEN again); CACHED = %v", runs(), again.vars["CACHED"])
	}
}

// A failing command, a missing secret, an unreadable env file or a
// missing profile stop the job from starting, with what went wrong.
func TestEnvErrors(t *testing.T) {
	tests := []struct {
		name, src string
		profile   string
		want      string
	}{
		{"command fails", "env: {W: {command: 'echo warming up >&2; echo no nproc >&2; exit 3'}}\n", "", `env W: command "echo warming up >&2; echo no nproc >&2; exit 3" failed: exit status 3: no nproc`},
		{"env secret not set", "secrets: {K: '${env:NOT_SET_ANYWHERE}'}\n", "", `secrets.K: environment variable NOT_SET_ANYWHERE is not set`},
		{"secret file missing", "secrets: {K: {provider: file, key: nope}}\n", "", `secrets.K: cannot read the secret file: open `},
		{"required env file missing", "env_files: [{path: nope.env, required: true}]\n", "", `env_files[0]: open `},
		{"env file syntax", "env_files: [bad.env]\n", "", `bad.env:2: want NAME=value`},
		{"condition not boolean", "env: {X: {condition: '${A}', when_true: a, when_false: b}}\n", "", `env X: condition: "${A}" is <nil>, not a boolean`},
		{"profile not found", "profiles: {dev: {}}\n", "prod", `profile "prod" not found: profiles: defines dev`},
		{"secret in the error masked", "env_files: [secret.env]\nenv: {W: {command: 'echo \"no access with $API_TOKEN\" >&2; exit 1'}}\n", "", `exit status 1: no access with ***`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wf := envWorkflow(t, tt.src, map[string]string{"bad.env": "A=1\nnot a pair\n", "secret.env": "API_TOKEN=tok-file-1234\n"})
			_, err := Resolve(t.Context(), wf, Spec{Profile: tt.profile}, []string{"PATH=" + os.Getenv("PATH")})
			var ee *Error
			if !errors.As(err, &ee) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want an Error with %q", err, tt.want)
			}
		})
	}
}

// An env file or a file secret that is a named pipe, a device or larger
// than a workflow file may be is refused at once (a pipe's open used to
// wait for a writer for ever, /dev/zero was read until memory ran out),
// as an Error naming it: the job does not start.
func TestEnvFilesRefused(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big.env")
	if err := os.WriteFile(big, []byte("A="+strings.Repeat("x", workflow.MaxFileSize-1)), 0o600); err != nil {
		t.Fatal(err) // MaxFileSize+1 bytes: one over the cap
	}
	for _, path := range []string{fifo, "/dev/zero", big} {
		want := "not a regular file"
		if path == big {
			want = "file too large: runner reads at most 4 MiB"
		}
		for _, src := range []string{"env_files: [" + path + "]\n", "secrets: {K: {provider: file, key: " + path + "}}\n"} {
			t.Run(src, func(t *testing.T) {
				wf := envWorkflow(t, src, nil)
				done := make(chan error, 1)
				go func() {
					_, err := Resolve(t.Context(), wf, Spec{}, nil)
					done <- err
				}()
				select {
				case err := <-done:
					var ee *Error
					if !errors.As(err, &ee) || !strings.Contains(err.Error(), path+": "+want) {
						t.Errorf("error %v, want an Error with %q", err, path+": "+want)
					}
				case <-time.After(testkit.Scale(time.Minute)):
					t.Fatal("resolving the environment still waits on the file after a minute")
				}
			})
		}
	}
}

// A missing optional env file is skipped; paths are relative to the
// workflow file; secrets resolve from the environment built so far (an env
// file included) and from files, without the file's final newline.
func TestEnvFilesAndSecrets(t *testing.T) {
	wf := envWorkflow(t, `env_files: [missing.env, base.env]
secrets:
  API_KEY: "${env:API_KEY}"
  FROM_PARENT: {provider: env, key: PARENT_SECRET}
  KEY_FILE: {provider: file, key: key.txt}
env:
  DEPLOY_ENV: {condition: "${BRANCH} == 'main' && MODE == 'fast'", when_true: production, when_false: staging}
`, map[string]string{"base.env": "API_KEY=sk-from-file\nMODE=fast\n", "key.txt": "line one\nline two\n"})
	r, err := Resolve(t.Context(), wf, Spec{Set: map[string]string{"BRANCH": "main"}}, []string{"PARENT_SECRET=p-secret"})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"API_KEY=sk-from-file", "FROM_PARENT=p-secret", "KEY_FILE=line one\nline two"}
	if !reflect.DeepEqual(r.secrets, want) {
		t.Errorf("secrets %q, want %q", r.secrets, want)
	}
	if got := r.vars["DEPLOY_ENV"]; got != "production" {
		t.Errorf("DEPLOY_ENV = %v: the condition reads --set and env file values", got)
	}
}

func TestParseDotenv(t *testing.T) {
	src := `# a comment

DATABASE_URL=postgresql://localhost:5432/mydb
  export REDIS_HOST = localhost
EMPTY=
DOUBLE="value with spaces"
SINGLE='single quoted'
EMBEDDED="value with 'single' quotes inside"
HASH=a#b # not a comment
PRIVATE_KEY="-----BEGIN-----
MIIEvQ
-----END-----"
AFTER=1
`
	got, err := parseDotenv([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	want := [][2]string{
		{"DATABASE_URL", "postgresql://localhost:5432/mydb"}, {"REDIS_HOST", "localhost"}, {"EMPTY", ""},
		{"DOUBLE", "value with spaces"}, {"SINGLE", "single quoted"}, {"EMBEDDED", "value with 'single' quotes inside"},
		{"HASH", "a#b # not a comment"}, {"PRIVATE_KEY", "-----BEGIN-----\nMIIEvQ\n-----END-----"}, {"AFTER", "1"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %q\nwant %q", got, want)
	}
	for src, msg := range map[string]string{
		"A=1\nINVALID_LINE\n":       "2: want NAME=value",
		"1A=x\n":                    `1: "1A" is not a valid variable name`,
		"BAD_QUOTE=\"unclosed\nB=1": `1: the value of BAD_QUOTE opens with " and is not closed`,
		"MIXED=\"value'\n":          `1: the value of MIXED opens with " and ends with '`,
	} {
		if _, err := parseDotenv([]byte(src)); err == nil || err.Error() != msg {
			t.Errorf("%q: error %v, want %q", src, err, msg)
		}
	}
}
