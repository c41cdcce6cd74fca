package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/runnerdev/runner/cmd"
	"github.com/runnerdev/runner/workflow/eventlog"
)

// BenchmarkRetryDelayAccuracy measures how much later than scheduled the
// next attempt starts: 200 delays of 20 ms between real failing commands,
// from each retry_decision event to the following attempt_started.
// Reported: median and worst overshoot in microseconds.
func BenchmarkRetryDelayAccuracy(b *testing.B) {
	dir := b.TempDir()
	file := filepath.Join(dir, "delays.yml")
	os.WriteFile(file, []byte("- shell: exit 1\n  retry_config: {attempts: 201, backoff: fixed, initial_delay: 20ms}\n"), 0o600)
	var overshoots []time.Duration
	for i := range b.N {
		id := "d" + strconv.Itoa(i)
		var out bytes.Buffer
		if code := cmd.Main(context.Background(), []string{"run", "-q", "--state-dir", dir, "--job-id", id, file}, &out, &out); code != 1 {
			b.Fatalf("exit %d: %s", code, out.String())
		}
		events, err := eventlog.Read(filepath.Join(dir, "jobs", id, "events.jsonl"), func(e eventlog.Event) bool {
			return e.Type == "retry_decision" || e.Type == "attempt_started"
		})
		if err != nil {
			b.Fatal(err)
		}
		for k, e := range events {
			if e.Type != "retry_decision" || e.Str("action") != "retry" || k+1 == len(events) {
				continue
			}
			overshoots = append(overshoots, events[k+1].Time.Sub(e.Time)-20*time.Millisecond)
		}
	}
	if len(overshoots) != 200*b.N {
		b.Fatalf("measured %d delays, want %d", len(overshoots), 200*b.N)
	}
	slices.Sort(overshoots)
	b.ReportMetric(float64(overshoots[len(overshoots)/2].Microseconds()), "median-overshoot-µs")
	b.ReportMetric(float64(overshoots[len(overshoots)-1].Microseconds()), "worst-overshoot-µs")
	b.ReportMetric(float64(overshoots[0].Microseconds()), "best-overshoot-µs")
}
