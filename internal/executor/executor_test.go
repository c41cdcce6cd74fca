package executor

import (
	"io"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/runnerdev/runner/internal/eventlog"
	"github.com/runnerdev/runner/internal/testkit"
	"github.com/runnerdev/runner/workflow"
)

// BenchmarkRunStep is one step of `true` with everything runner does
// around it (events, interpolation, environment, the retry loop), to set
// against proc's BenchmarkRunTrue, the process alone.
func BenchmarkRunStep(b *testing.B) {
	benchmarkStep(b, "- shell: \"true\"\n")
}

// BenchmarkRunStepLoud is a step printing 8 MiB, to measure what keeping
// the end of every step's stdout (${shell.output}) costs a step that never
// reads it.
func BenchmarkRunStepLoud(b *testing.B) {
	benchmarkStep(b, "- shell: \"head -c 8388608 /dev/zero\"\n")
}

// benchmarkStep runs the one step of the workflow src over and over.
func benchmarkStep(b *testing.B, src string) {
	b.ReportAllocs()
	wf, err := workflow.Parse("b.yml", []byte(src))
	if err != nil {
		b.Fatal(err)
	}
	log, err := eventlog.Open(filepath.Join(b.TempDir(), "events.jsonl"), "b", eventlog.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer log.Close()
	x := &Executor{
		JobID:  "b",
		Emit:   func(e eventlog.Event) { log.Emit(e) },
		Env:    os.Environ(),
		Stdout: io.Discard,
		Stderr: io.Discard,
		TmpDir: b.TempDir(),
	}
	sc := NewScope(nil, os.Environ())
	for b.Loop() {
		if res := x.RunStep(b.Context(), wf.Steps[0], Run{Scope: sc}); res.Status != StepSucceeded {
			b.Fatal(res.Err)
		}
	}
}

// A command that makes $RUNNER_RETRY_AFTER_FILE a named pipe does not
// hang runner: the file is opened without blocking and ignored.
func TestRetryAfterFileThatIsAPipe(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "retry-after")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	done := make(chan *time.Duration, 1)
	go func() { done <- readRetryAfter(fifo) }()
	select {
	case d := <-done:
		if d != nil {
			t.Errorf("a pipe gave a delay of %s", *d)
		}
	case <-time.After(testkit.Scale(time.Minute)):
		t.Fatal("reading the Retry-After file still waits on the pipe after a minute")
	}
}
