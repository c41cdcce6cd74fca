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

// runJob runs a workflow file in-process as job id under the state dir,
// checks the exit code and returns the job's events.
func runJob(t testing.TB, dir, file, id string, wantCode int, flags ...string) []eventlog.Event {
	t.Helper()
	var out bytes.Buffer
	args := append([]string{"run", "-q", "--state-dir", dir, "--job-id", id}, flags...)
	if code := cmd.Main(context.Background(), append(args, file), &out, &out); code != wantCode {
		t.Fatalf("run %s: exit %d, want %d: %s", id, code, wantCode, out.String())
	}
	events, err := eventlog.Read(filepath.Join(dir, "jobs", id, "events.jsonl"), eventlog.Query{})
	if err != nil {
		t.Fatal(err)
	}
	return events
}

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
		var ds []string
		for _, e := range runJob(t, dir, file, id, 1, "--seed", seed) {
			if e.Type == "retry_decision" {
				ds = append(ds, e.Fields["delay_ms"].(interface{ String() string }).String())
			}
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
