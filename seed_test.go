package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/runnerdev/runner/cmd"
	"github.com/runnerdev/runner/workflow/eventlog"
)

// The same --seed gives byte-identical retry delays; another seed differs.
func TestSeedReproducesJitteredSchedule(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "jitter.yml")
	os.WriteFile(file, []byte(`
- shell: exit 1
  retry_config:
    attempts: 6
    initial_delay: 5ms
    max_delay: 50ms
    jitter: full
    on_failure: continue
- shell: exit 1
  retry_config: {attempts: 4, initial_delay: 10ms, jitter: true, jitter_factor: 1}
`), 0o600)
	delays := func(id, seed string) []string {
		var out, errOut bytes.Buffer
		code := cmd.Main(context.Background(), []string{"run", "--state-dir", dir, "--job-id", id, "--seed", seed, file}, &out, &errOut)
		if code != 1 {
			t.Fatalf("run %s: exit %d: %s", id, code, errOut.String())
		}
		events, err := eventlog.Read(filepath.Join(dir, "jobs", id, "events.jsonl"), func(e eventlog.Event) bool { return e.Type == "retry_decision" })
		if err != nil {
			t.Fatal(err)
		}
		var ds []string
		for _, e := range events {
			ds = append(ds, e.Fields["delay_ms"].(interface{ String() string }).String())
		}
		return ds
	}
	a, b, c := delays("a", "42"), delays("b", "42"), delays("c", "43")
	if len(a) != 10 || !slices.Equal(a, b) {
		t.Errorf("seed 42 twice: %v vs %v", a, b)
	}
	if slices.Equal(a, c) {
		t.Errorf("seeds 42 and 43 gave the same delays %v", a)
	}
}
