package progress_test

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/runnerdev/runner/internal/eventlog"
	"github.com/runnerdev/runner/internal/progress"
)

// write writes text as a command's output would.
func write(t *testing.T, w io.Writer, text string) {
	t.Helper()
	if _, err := io.WriteString(w, text); err != nil {
		t.Fatal(err)
	}
}

// A command's output that does not end a line is not glued to runner's
// next line: runner ends the line first, on the stream it writes to.
func TestOutputWithoutNewlineIsNotGluedToTheNextLine(t *testing.T) {
	t.Run("stderr", func(t *testing.T) {
		var stdout, stderr bytes.Buffer
		d := progress.New(&stdout, &stderr, "never", true, true)
		write(t, d.Stderr(), "no newline")
		d.Line("==> next", "")
		d.Close()
		if got, want := stderr.String(), "no newline\n==> next\n"; got != want {
			t.Errorf("stderr: got %q, want %q", got, want)
		}
	})
	t.Run("stdout apart from stderr", func(t *testing.T) {
		var stdout, stderr bytes.Buffer
		d := progress.New(&stdout, &stderr, "never", true, true)
		write(t, d.Stdout(), "no newline")
		d.Line("==> next", "")
		d.Document(func(w io.Writer) { write(t, w, "{}\n") })
		d.Close()
		if got, want := stderr.String(), "==> next\n"; got != want {
			t.Errorf("stderr: got %q, want %q", got, want)
		}
		if got, want := stdout.String(), "no newline\n{}\n"; got != want {
			t.Errorf("stdout: got %q, want %q", got, want)
		}
	})
	t.Run("stdout and stderr one file", func(t *testing.T) {
		f, err := os.Create(filepath.Join(t.TempDir(), "out"))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		d := progress.New(f, f, "never", true, true)
		write(t, d.Stdout(), "no newline")
		d.Line("==> next", "")
		d.Close()
		got, err := os.ReadFile(f.Name())
		if err != nil {
			t.Fatal(err)
		}
		if want := "no newline\n==> next\n"; string(got) != want {
			t.Errorf("got %q, want %q", got, want)
		}
	})
}

// The live status line is erased before anything else is written to
// stderr and drawn again below it, but not after output that left a line
// open: it would be glued to that line.
func TestLiveLineStaysBelowTheOutput(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var stdout, stderr bytes.Buffer
		d := progress.New(&stdout, &stderr, "always", true, false)
		d.Observe(eventlog.MapStarted(2, 2, 1, "none"))
		d.Line("==> map", "")
		write(t, d.Stderr(), "partial")
		d.Line("!!! failed", progress.Red)
		write(t, d.Stderr(), "whole\n")
		d.Close()
		const status = "\r\x1b[Kmap 0/2 done · 0 running · 2 pending"
		want := "==> map\n" + status +
			"\r\x1b[K" + "partial" +
			"\n!!! failed\n" + status +
			"\r\x1b[K" + "whole\n" + status +
			"\r\x1b[K"
		if got := stderr.String(); got != want {
			t.Errorf("got  %q\nwant %q", got, want)
		}
	})
}

// Without a terminal, a MapReduce job gets a timestamped progress line
// every interval, and nothing between them.
func TestPlainProgressLines(t *testing.T) {
	t.Setenv("RUNNER_PROGRESS_INTERVAL", "")
	synctest.Test(t, func(t *testing.T) {
		var stdout, stderr bytes.Buffer
		d := progress.New(&stdout, &stderr, "never", true, false)
		d.Observe(eventlog.MapStarted(2, 2, 1, "none"))
		d.Observe(eventlog.ItemStarted("a", 0, 1, false))
		time.Sleep(25 * time.Second)
		d.Close()
		start := time.Now().Add(-25 * time.Second).UTC()
		want := ""
		for _, at := range []time.Duration{10 * time.Second, 20 * time.Second} {
			want += start.Add(at).Format(time.RFC3339) + " progress: map 0/2 done · 1 running · 1 pending\n"
		}
		if got := stderr.String(); got != want {
			t.Errorf("got  %q\nwant %q", got, want)
		}
	})
}

// The status line shows the workflow's circuit breaker only when it has
// one, and then in the state its events give it.
func TestBreakerShownOnlyWhenConfigured(t *testing.T) {
	workflowBreaker := func(to string) eventlog.Event { return eventlog.CircuitChanged(to, "workflow", "") }
	for _, tc := range []struct {
		name       string
		configured bool
		events     []eventlog.Event
		want       string // the end of the status line
	}{
		{"none configured", false, nil, " · 2 pending"},
		{"configured", true, nil, " · 2 pending · breaker closed"},
		{"opened", true, []eventlog.Event{workflowBreaker("open")}, " · breaker open"},
		{"half-open", true, []eventlog.Event{workflowBreaker("open"), workflowBreaker("half_open")}, " · breaker half-open"},
		{"a step's breaker is not the workflow's", true, []eventlog.Event{eventlog.CircuitChanged("open", "step", "s")}, " · breaker closed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var stdout, stderr bytes.Buffer
				d := progress.New(&stdout, &stderr, "always", true, false)
				d.SetBreaker(tc.configured)
				d.Observe(eventlog.MapStarted(2, 2, 1, "none"))
				for _, e := range tc.events {
					d.Observe(e)
				}
				d.Line("==> map", "")
				d.Close()
				status := strings.TrimSuffix(strings.TrimPrefix(stderr.String(), "==> map\n\r\x1b[K"), "\r\x1b[K")
				if !strings.HasSuffix(status, tc.want) {
					t.Errorf("status line %q does not end with %q", status, tc.want)
				}
				if !tc.configured && strings.Contains(status, "breaker") {
					t.Errorf("status line %q shows a breaker that is not configured", status)
				}
			})
		})
	}
}

// SetSteps gives the step count of a standard workflow's status line.
func TestStepCountFromSetSteps(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var stdout, stderr bytes.Buffer
		d := progress.New(&stdout, &stderr, "always", true, false)
		d.SetSteps(map[string]int{"commands": 3})
		d.Observe(eventlog.StepStarted("build", 2, "make"))
		d.Line("==> build", "")
		d.Close()
		if got, want := stderr.String(), "==> build\n\r\x1b[Kstep 2/3 build · 0s\r\x1b[K"; got != want {
			t.Errorf("got  %q\nwant %q", got, want)
		}
	})
}

// The map's status line goes as soon as the map ends, not at the next
// redraw: the reduce phase does not run below a finished map's count.
func TestMapLineErasedWhenTheMapEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var stdout, stderr bytes.Buffer
		d := progress.New(&stdout, &stderr, "always", true, false)
		defer d.Close()
		d.Observe(eventlog.MapStarted(1, 1, 1, "none"))
		d.Line("==> map", "")
		d.Observe(eventlog.MapCompleted(eventlog.ItemCounts{Total: 1, Succeeded: 1}))
		if got, want := stderr.String(), "==> map\n\r\x1b[Kmap 0/1 done · 0 running · 1 pending\r\x1b[K"; got != want {
			t.Errorf("got  %q\nwant %q", got, want)
		}
	})
}
