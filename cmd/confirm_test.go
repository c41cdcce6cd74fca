package cmd

import (
	"strings"
	"testing"

	"github.com/runnerdev/runner/internal/workspace"
)

// At the end of a job that succeeded on its job branch runner asks
// whether to merge only on a terminal and only with a branch to merge
// into; "y" or "yes" is yes, anything else (no answer included) no.
func TestAskMerge(t *testing.T) {
	end := workspace.End{Branch: "runner/j", Target: "main"}
	tests := []struct {
		name        string
		interactive bool
		end         workspace.End
		answer      string
		asked, yes  bool
	}{
		{"no terminal", false, end, "y\n", false, false},
		{"detached HEAD", true, workspace.End{Branch: "runner/j"}, "y\n", false, false},
		{"y", true, end, "y\n", true, true},
		{"YES", true, end, " YES \n", true, true},
		{"empty answer", true, end, "\n", true, false},
		{"no", true, end, "n\n", true, false},
		{"end of input", true, end, "", true, false},
	}
	for _, tt := range tests {
		c := console{in: strings.NewReader(tt.answer), interactive: func() bool { return tt.interactive }}
		var out strings.Builder
		yes := c.canAsk(tt.end) && c.askMerge(&out, tt.end)
		if asked := out.String() != ""; asked != tt.asked || yes != tt.yes {
			t.Errorf("%s: asked %v (%q), yes %v; want %v, %v", tt.name, asked, out.String(), yes, tt.asked, tt.yes)
		}
		if tt.asked && out.String() != "merge runner/j into main? [y/N] " {
			t.Errorf("%s: asked %q", tt.name, out.String())
		}
	}
}
