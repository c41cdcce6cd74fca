package e2e

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/runnerdev/runner/cmd"
	"github.com/runnerdev/runner/internal/eventlog"
	"github.com/runnerdev/runner/internal/state"
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

// BenchmarkEventsCommand times `runner events` on a map job's log of
// 600,000 events (100,000 items of one step, one in ten retried once):
// the text listing, the --json copy, and the two filters.
func BenchmarkEventsCommand(b *testing.B) {
	dir := b.TempDir()
	file := filepath.Join(dir, "one.yml")
	os.WriteFile(file, []byte("- shell: 'true'\n"), 0o600)
	runJob(b, dir, file, "big", 0)
	writeMapJobLog(b, state.Store{Dir: dir}.Layout("big").Events, 600_000)
	devNull, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		b.Fatal(err)
	}
	defer devNull.Close()
	for _, args := range [][]string{
		{"events", "big"},
		{"events", "--json", "big"},
		{"events", "--type", "attempt_failed", "big"},
		{"events", "--item", "50000", "big"},
	} {
		name := strings.Join(args[1:len(args)-1], "=")
		if name == "" {
			name = "text"
		}
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				var stderr bytes.Buffer
				if code := cmd.Main(b.Context(), append([]string{"--state-dir", dir}, args...), devNull, &stderr); code != 0 {
					b.Fatalf("runner %v: exit %d: %s", args, code, stderr.String())
				}
			}
		})
	}
}

// writeMapJobLog writes n events as a map job of one-step items writes
// them, with the constructors its writers use.
func writeMapJobLog(b *testing.B, path string, n int) {
	os.Remove(path)
	at := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	l, err := eventlog.Open(path, "big", eventlog.Options{Now: func() time.Time {
		at = at.Add(37913 * time.Nanosecond) // every fraction of a second, as events come
		return at
	}})
	if err != nil {
		b.Fatal(err)
	}
	written := 0
	emit := func(e eventlog.Event) {
		if _, err := l.Emit(e); err != nil {
			b.Fatal(err)
		}
		written++
	}
	items := n / 6
	emit(eventlog.JobStarted(14382549562809376382, "bench", "map.yml", "mapreduce", 4242))
	emit(eventlog.ItemsLoaded(items, "file items.txt", 120*time.Millisecond))
	emit(eventlog.MapStarted(items, items, 16, "none"))
	for i := 0; written < n-2; i++ {
		id, d := strconv.Itoa(i+1), time.Duration(i%97)*time.Millisecond
		emit(eventlog.ItemStarted(id, i, 1, false))
		emit(eventlog.StepStarted("step-1", 1, "./process.sh ${item}").WithItem(id))
		emit(eventlog.AttemptStarted("step-1", 1).WithItem(id))
		attempt := 1
		if i%10 == 0 {
			f := eventlog.Failure{Step: "step-1", Attempt: 1, Kind: "exit", ExitCode: 22, Duration: d,
				Message: "exit status 22: curl: (22) The requested URL returned error: 503"}
			emit(eventlog.AttemptFailed(f).WithItem(id))
			emit(eventlog.RetryDecision("step-1", eventlog.Decision{Attempt: 1, Matcher: "exit_codes 22", Action: "retry",
				Delay: time.Second, Reason: "matched exit_codes 22", Limit: 3, Count: 1, Kind: "exit", ExitCode: 22}).WithItem(id))
			attempt = 2
			emit(eventlog.AttemptStarted("step-1", attempt).WithItem(id))
		}
		emit(eventlog.AttemptSucceeded("step-1", attempt, d).WithItem(id))
		emit(eventlog.StepCompleted("step-1", 0, d).WithItem(id))
		emit(eventlog.ItemSucceeded(id, 1, d))
	}
	emit(eventlog.MapCompleted(eventlog.ItemCounts{Total: items, Succeeded: items}))
	emit(eventlog.JobFinished("completed", 0, 22*time.Second, nil, map[string]any{"items": &state.ItemCounts{Total: items, Succeeded: items}}))
	if err := l.Close(); err != nil {
		b.Fatal(err)
	}
}
