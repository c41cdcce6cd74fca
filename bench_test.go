package main

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/runnerdev/runner/eventlog"
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
		var events []eventlog.Event
		for _, e := range runJob(b, dir, file, "d"+strconv.Itoa(i), 1) {
			if e.Type == "retry_decision" || e.Type == "attempt_started" {
				events = append(events, e)
			}
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
