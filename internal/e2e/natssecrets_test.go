package e2e

import (
	"cmp"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/runnerdev/runner/internal/natstest"
)

// literalSecretWorkflows each write the literal secret "lit-s3cr3t" in one
// place a --nats run must refuse (SPEC §11.6), with where the refusal
// names it: top goes before the map, steps are its agent_template.
var literalSecretWorkflows = []struct {
	name, top, steps, where string
}{
	{"step env", "", `
    - shell: echo ${item}
      env: {STEP_KEY: lit-s3cr3t}`, `secret STEP_KEY is given in the workflow file, line 5 \(the env of step "step 1"\)`},
	{"a name under secrets:", "secrets: [DEPLOY]\n", `
    - name: deploy
      shell: echo ${item}
      env: {DEPLOY: lit-s3cr3t}`, `secret DEPLOY is given in the workflow file, line 6 \(the env of step "deploy"\)`},
	{"agent.env", "agent: {env: {API_TOKEN: lit-s3cr3t}}\n", "", `secret API_TOKEN is given in the workflow file, agent.env`},
	{"foreach do step env", "", `
    - foreach:
        foreach: [a, b]
        do:
          - name: inner
            shell: echo ${item}
            env: {INNER_PASSWORD: lit-s3cr3t}`, `secret INNER_PASSWORD is given in the workflow file, line 8 \(the env of step "inner"\)`},
	{"setup step env", "setup:\n  - {name: prepare, shell: 'true', env: {SETUP_SECRET: lit-s3cr3t}}\n", "",
		`secret SETUP_SECRET is given in the workflow file, line 3 \(the env of step "prepare"\)`},
	{"profile", "profiles: {prod: {DB_PASSWORD: lit-s3cr3t}}\n", "", `secret DB_PASSWORD is given in the workflow file:`},
}

// TestNATSLiteralSecretsRefused runs on a real NATS server, with a worker
// pulling, a workflow that writes a literal secret in each place one can
// be written: the run is refused (exit 2, naming the variable and where)
// and nothing of the value reaches the server's store. Before, a step's
// env, agent.env, a foreach do step's env and a setup step's env went
// into KV_RUNNER_JOBS in clear.
func TestNATSLiteralSecretsRefused(t *testing.T) {
	skipNATSProcesses(t, "")
	t.Parallel()
	const value = "lit-s3cr3t"
	storeDir := t.TempDir()
	srv, err := natstest.StartIn(storeDir)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown()
	dir := t.TempDir()
	startWorkerArgs(t, dir, srv.URL(), "lits", "w", nil)
	for i, tt := range literalSecretWorkflows {
		name := "wf" + string(rune('a'+i)) + ".yml"
		src := "mode: mapreduce\n" + tt.top + "map:\n  input: seq 1 2\n  agent_template:" + cmp.Or(tt.steps, "\n    - shell: echo ${item}") + "\n"
		if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o600); err != nil {
			t.Fatal(err)
		}
		args := []string{"run", "--nats", srv.URL(), "--queue", "lits", "--job-id", strings.TrimSuffix(name, ".yml"), name}
		if tt.name == "profile" {
			args = append(args, "--profile", "prod")
		}
		code, out := runRunner(dir, nil, args...)
		if code != 2 || !regexp.MustCompile(tt.where).MatchString(out) {
			t.Errorf("%s: exit %d, want 2 with %q:\n%s", tt.name, code, tt.where, out)
		}
	}
	storeHolds(t, storeDir, value)
}

// storeHolds fails t for each file of a NATS server's store directory
// that holds value.
func storeHolds(t *testing.T, storeDir, value string) {
	t.Helper()
	err := filepath.WalkDir(storeDir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(path)
		if strings.Contains(string(data), value) {
			t.Errorf("the server's store holds the secret in %s", path)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}
