package job

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/runnerdev/runner/internal/state"
)

// The steps of a parallel: block run at once, each journaled; what they
// capture is read after the block; on the terminal their lines are
// tagged; a failed step with fail_fast cancels its sibling, which a
// resume runs again with the failed one, not the one that finished.
func TestRunPhaseParallel(t *testing.T) {
	dir := t.TempDir()
	src := `commands:
  - parallel:
      - name: a
        shell: echo a-out
        capture: a
      - name: b
        shell: |
          if [ -f ` + dir + `/fixed ]; then echo b-out; exit 0; fi
          timeout 60 sh -c 'until grep -q "\"step\":\"a\",\"status\":\"succeeded\"" ` + dir + `/.runner/jobs/p/progress.jsonl; do sleep 0.01; done'
          exit 3
      - name: c
        shell: |
          if [ -f ` + dir + `/fixed ]; then exit 0; fi
          sleep 60
  - shell: echo "after ${a}"
`
	store := state.Store{Dir: filepath.Join(dir, ".runner")}
	var out bytes.Buffer
	j, err := Start(parse(t, "w.yml", src), []byte(src), Options{Store: store, JobID: "p", Stdout: &out, Stderr: &out})
	if err != nil {
		t.Fatal(err)
	}
	pr, err := j.RunStandard(t.Context())
	var failed *StepFailedError
	if !errors.As(err, &failed) || !strings.Contains(err.Error(), "exit status 3") {
		t.Fatalf("first run: %v, want b's failure", err)
	}
	if pr.Succeeded != 1 || pr.Failed != 1 {
		t.Errorf("first run: %+v, want a succeeded, b failed (c cancelled: neither)", pr)
	}
	if !strings.Contains(out.String(), "a\ta-out\n") {
		t.Errorf("a's line not tagged: %q", out.String())
	}
	j.Finish(state.Failed, 1, err, nil)

	if err := os.WriteFile(filepath.Join(dir, "fixed"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	j, err = Resume("p", Options{Store: store, Stdout: &out, Stderr: &out})
	if err != nil {
		t.Fatal(err)
	}
	if pr, err = j.RunStandard(t.Context()); err != nil {
		t.Fatal(err)
	}
	j.Finish(state.Completed, 0, nil, nil)
	if pr.Succeeded != 4 {
		t.Errorf("resumed: %+v, want 4 succeeded", pr)
	}
	got := out.String()
	if strings.Contains(got, "a\ta-out") || !strings.Contains(got, "b\tb-out\n") || !strings.Contains(got, "after a-out\n") {
		t.Errorf("resumed output %q: want b again, not a, and a's capture read after the block", got)
	}
}
