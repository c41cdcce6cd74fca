package executor

import (
	"path/filepath"
	"strings"
	"testing"
)

// output_file receives the command's stdout as well, written anew by each
// attempt, in the step's directory; the output is still captured.
func TestOutputFile(t *testing.T) {
	res, _, dir := runFirstStep(t, t.Context(), `
- id: test
  shell: 'n=$(cat runs 2>/dev/null || echo 0); echo $((n+1)) > runs; echo "run $n"; echo oops >&2; [ "$n" -ge 1 ]'
  output_file: test-results.txt
  retry_config: {attempts: 2, initial_delay: 10ms}
`)
	if res.Status != StepSucceeded {
		t.Fatalf("%s: %v", res.Status, res.Err)
	}
	if got := readFile(t, filepath.Join(dir, "test-results.txt")); got != "run 1\n" {
		t.Errorf("output_file holds %q, want the last attempt's stdout", got)
	}
	if got := res.Vars["steps.test"].(map[string]any)["output"]; got != "run 1" {
		t.Errorf("the step's output is %q", got)
	}
}

// output_file makes its missing parent directories; a parent that is a
// file fails the step, naming output_file.
func TestOutputFileMakesDirectories(t *testing.T) {
	res, _, dir := runFirstStep(t, t.Context(), "- shell: echo report\n  output_file: build/reports/test.txt\n")
	if res.Status != StepSucceeded {
		t.Fatalf("%s: %v", res.Status, res.Err)
	}
	if got := readFile(t, filepath.Join(dir, "build", "reports", "test.txt")); got != "report\n" {
		t.Errorf("output_file holds %q", got)
	}
	res, _, _ = runFirstStep(t, t.Context(), "- shell: echo report\n  output_file: /dev/null/report.txt\n")
	if res.Status != StepFailed || res.Err == nil || !strings.Contains(res.Err.Error(), "output_file: mkdir /dev/null: not a directory") {
		t.Errorf("%s: %v", res.Status, res.Err)
	}
}
