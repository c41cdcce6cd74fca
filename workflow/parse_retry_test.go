package workflow

import (
	"fmt"
	"strings"
	"testing"

	"github.com/runnerdev/runner/retryv2"
)

// Every strategy retryv2 knows is accepted by name and in its map form,
// and the map form checks its parameters: a strategy added to
// retryv2.Strategies without a case in the parser fails here.
func TestParseEveryStrategy(t *testing.T) {
	for _, s := range retryv2.Strategies {
		t.Run(string(s), func(t *testing.T) {
			params, bogus := "", "bogus: 1"
			if s == retryv2.Custom {
				params, bogus = "delays: [1s]", "delays: [1s], bogus: 1"
			}
			mapForm := "- shell: x\n  retry_config: {backoff: {%s: {%s}}}\n"
			wf, err := Parse("x.yml", []byte(fmt.Sprintf(mapForm, s, params)))
			if err != nil {
				t.Fatal(err)
			}
			if got := wf.Steps[0].Retry[0].Backoff.Strategy; got != s {
				t.Errorf("map form: strategy %q, want %q", got, s)
			}
			// A parameter runner does not know (Prodigy's initial) is
			// passed over with a warning, as Prodigy does.
			if _, warns := parseWarn(t, fmt.Sprintf(mapForm, s, bogus)); len(warns) != 1 || !strings.Contains(warns[0], `ignored: runner does not know "bogus"`) {
				t.Errorf("unknown parameter of %s: warnings %q", s, warns)
			}
			if s == retryv2.Custom {
				return // the bare name is refused: custom needs its delays
			}
			wf, err = Parse("x.yml", []byte(fmt.Sprintf("- shell: x\n  retry_config: {backoff: %s}\n", s)))
			if err != nil {
				t.Fatal(err)
			}
			if got := wf.Steps[0].Retry[0].Backoff.Strategy; got != s {
				t.Errorf("name form: strategy %q, want %q", got, s)
			}
		})
	}
}

func TestParseUnknownStrategyListsEveryStrategy(t *testing.T) {
	errs := parseErr(t, "x.yml", "- shell: x\n  retry_config: {backoff: exponentail}\n")
	want := `2:27: retry_config.backoff must be one of fixed, linear, exponential, fibonacci, custom, not "exponentail" (did you mean "exponential"?)`
	if len(errs) != 1 || errs[0] != want {
		t.Errorf("errors %q, want %q", errs, want)
	}
}
