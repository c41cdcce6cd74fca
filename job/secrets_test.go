package job

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

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
