package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/runnerdev/runner/cmd"
	"github.com/runnerdev/runner/internal/eventlog"
	"github.com/runnerdev/runner/internal/state"
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
	events, err := eventlog.Read(state.Store{Dir: dir}.Layout(id).Events, eventlog.Query{})
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

// A dry run with --seed shows the delays the run with that seed waits:
// the delay_ms of its --output json document, one JSON document and
// nothing else, are the run's retry_decision delay_ms, in order.
func TestDryRunSeedShowsTheRunsDelays(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "jitter.yml")
	os.WriteFile(file, []byte(`
- name: full
  shell: exit 1
  retry_config: {attempts: 5, backoff: fixed, initial_delay: 40ms, jitter: full, on_failure: continue}
- name: proportional
  shell: exit 1
  retry_config: {attempts: 4, initial_delay: 10ms, jitter: true, jitter_factor: 1}
`), 0o600)
	var out, stderr bytes.Buffer
	if code := cmd.Main(context.Background(), []string{"run", "--dry-run", "--seed", "42", "--output", "json", file}, &out, &stderr); code != 0 {
		t.Fatalf("dry run: exit %d: %s", code, stderr.String())
	}
	var plan struct {
		Seed   uint64
		Phases []struct {
			Steps []struct {
				Retry []struct {
					DelaysAre string `json:"delays_are"`
					Delays    []struct {
						DelayMS int64 `json:"delay_ms"`
					}
				}
			}
		}
	}
	dec := json.NewDecoder(&out)
	if err := dec.Decode(&plan); err != nil || dec.More() {
		t.Fatalf("the dry run's stdout is not one JSON document (%v):\n%s", err, out.String())
	}
	var planned []int64
	for _, ph := range plan.Phases {
		for _, s := range ph.Steps {
			for _, p := range s.Retry {
				if p.DelaysAre != "seeded" {
					t.Errorf("delays_are %q, want seeded", p.DelaysAre)
				}
				for _, d := range p.Delays {
					planned = append(planned, d.DelayMS)
				}
			}
		}
	}
	var waited []int64
	for _, e := range runJob(t, filepath.Join(dir, ".runner"), file, "real", 1, "--seed", "42") {
		if e.Type == "retry_decision" && e.Str("action") == "retry" {
			n, _ := e.Fields["delay_ms"].(json.Number).Int64()
			waited = append(waited, n)
		}
	}
	if plan.Seed != 42 || len(planned) != 7 || !slices.Equal(planned, waited) {
		t.Errorf("seed %d: the dry run shows delays %v ms, the run waited %v ms", plan.Seed, planned, waited)
	}
}
