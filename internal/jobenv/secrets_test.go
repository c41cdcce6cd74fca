package jobenv

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/runnerdev/runner/internal/executor"
	"github.com/runnerdev/runner/workflow"
)

func TestVarSealerRoundTrip(t *testing.T) {
	wf := &workflow.Workflow{Secrets: []string{"DB"}}
	s := newVarSealer(wf, []string{"DB=pass-1234", "PIN=123", "PLAIN=visible"}, []string{"API_TOKEN=tok-5678"})
	vars := map[string]any{
		"out":  "Bearer pass-1234",
		"cfg":  map[string]any{"list": []any{"tok-5678", 3.0, nil}, "ok": true},
		"n":    1,
		"free": "visible 123",
	}
	sealed := s.Seal(vars)
	data, err := json.Marshal(sealed)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{"pass-1234", "tok-5678"} {
		if strings.Contains(string(data), v) {
			t.Errorf("sealed vars hold %q: %s", v, data)
		}
	}
	if got, want := sealed["out"], "Bearer ***DB***"; got != want {
		t.Errorf("sealed out = %q, want %q", got, want)
	}
	if got, want := sealed["free"], "visible 123"; got != want {
		t.Errorf("sealed free = %q, want %q (not secrets)", got, want)
	}
	if got := s.Unseal(sealed); !reflect.DeepEqual(got, vars) {
		t.Errorf("unsealed = %v, want %v", got, vars)
	}
	var none *varSealer
	if got := none.Seal(vars); !reflect.DeepEqual(got, vars) {
		t.Errorf("no secrets: sealed = %v", got)
	}
}

// The secret-named env values of every step are masked, nested ones and
// agent.env's included.
func TestStepSecretsEverywhere(t *testing.T) {
	wf, err := workflow.Parse("wf.yml", []byte(`mode: mapreduce
agent: {env: {AGENT_TOKEN: agent-value}}
setup:
  - {shell: x, env: {SETUP_KEY: setup-value}}
  - foreach:
      foreach: [a]
      do:
        - {shell: x, env: {LOOP_PASSWORD: loop-value}}
    on_success:
      - {shell: x, env: {HANDLER_SECRET: handler-value}}
map:
  input: items.json
  agent_template: [{shell: x}]
`))
	if err != nil {
		t.Fatal(err)
	}
	got := stepSecrets(wf, executor.NewScope(nil, nil))
	want := []string{"SETUP_KEY=setup-value", "LOOP_PASSWORD=loop-value", "HANDLER_SECRET=handler-value", "AGENT_TOKEN=agent-value"}
	if !slices.Equal(got, want) {
		t.Errorf("step secrets %q, want %q", got, want)
	}
}
