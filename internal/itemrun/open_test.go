package itemrun

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"path/filepath"
	"testing"
	"time"

	"github.com/runnerdev/runner/internal/eventlog"
	"github.com/runnerdev/runner/internal/job"
	"github.com/runnerdev/runner/internal/proctest"
	"github.com/runnerdev/runner/internal/state"
	"github.com/runnerdev/runner/internal/testkit"
	"github.com/runnerdev/runner/workflow"
)

// A NATS worker opening a job runs the job's env commands under its
// context: stopping the worker ends a slow one, and everything it started,
// at once.
func TestOpenPortableEndsWithContext(t *testing.T) {
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "pid")
	// The command is slow only on the worker (ON_WORKER), not when the
	// job starts.
	src := "mode: mapreduce\nenv:\n  V: {command: 'if [ -n \"$ON_WORKER\" ]; then echo $$ > " + pidFile + "; exec sleep 600; fi; echo v'}\n" +
		"map:\n  input: seq 1 1\n  agent_template: [{shell: 'true'}]\n"
	portable := portableJob(t, src, filepath.Join(dir, "state"))
	t.Setenv("ON_WORKER", "1")

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := OpenPortable(ctx, portable, filepath.Join(dir, "worker"), "w1", func(eventlog.Event) {}, nil)
		done <- err
	}()
	pid := proctest.AwaitPID(t, pidFile, proctest.Ended(done))
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("OpenPortable: %v, want the context's cancel", err)
		}
	case <-time.After(testkit.Scale(time.Minute)):
		t.Fatal("OpenPortable still runs the job's env command a minute after its context ended")
	}
	proctest.AwaitGroupGone(t, pid)
}

// portableJob starts job "w" of the workflow src with its state in
// stateDir and returns its portable form, as a NATS worker receives it.
func portableJob(t *testing.T, src, stateDir string) json.RawMessage {
	t.Helper()
	wf, err := workflow.Parse("w.yml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	j, err := job.Start(wf, []byte(src), job.Options{Store: state.Store{Dir: stateDir}, JobID: "w", Stdout: io.Discard, Stderr: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { j.Close() })
	p, err := j.Portable()
	if err != nil {
		t.Fatal(err)
	}
	portable, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	return portable
}
