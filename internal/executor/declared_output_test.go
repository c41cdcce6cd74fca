package executor

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/runnerdev/runner/workflow"
)

// output: names the file the step writes, interpolated without shell
// escaping and relative to the step's directory; a step that wrote it
// succeeds as it would without the key.
func TestOutputWritten(t *testing.T) {
	res, dir, _ := runValidated(t, `
- shell: mkdir -p sub && cd sub && echo STRATEGY=minor > "$NAME"
  output: "sub/${NAME}"
  on_success:
    shell: touch handled
`, "NAME=it's here.txt")
	if res.Status != StepSucceeded {
		t.Fatalf("%s: %v", res.Status, res.Err)
	}
	if _, err := os.Stat(filepath.Join(dir, "handled")); err != nil {
		t.Error("on_success did not run after the output was found")
	}
}

// A step whose command succeeded without writing its output fails before
// its on_success handler and its validate check run, with a message that
// names the file; on_failure: continue (allow_failure) records the failure
// and lets the workflow go on.
func TestOutputMissing(t *testing.T) {
	for _, tt := range []struct{ name, extra string }{
		{"on_success", "on_success:\n    shell: touch ran"},
		{"validate", "validate:\n    shell: touch ran"},
		{"allow_failure", "allow_failure: true\n  on_success:\n    shell: touch ran"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			res, dir, events := runValidated(t, `
- shell: mkdir -p sub && echo nothing
  working_dir: sub/..
  output: sub/strategy.txt
  `+tt.extra+"\n")
			if res.Status != StepFailed || res.Err == nil || !strings.Contains(res.Err.Error(), "output: the step did not write sub/strategy.txt") {
				t.Fatalf("%s: %v", res.Status, res.Err)
			}
			if _, err := os.Stat(filepath.Join(dir, "ran")); err == nil {
				t.Errorf("%s ran after the output was missing", tt.name)
			}
			if fatal := tt.name != "allow_failure"; res.Fatal() != fatal || !fatal && res.Handled != workflow.FailContinue {
				t.Errorf("fatal %v, handled %q; events %v", res.Fatal(), res.Handled, events)
			}
		})
	}
}
