package job

import (
	"context"
	"errors"
	"io"
	"path/filepath"
	"testing"

	"github.com/runnerdev/runner/internal/state"
)

// Start runs the job's env commands under Options.Context: a job whose
// caller was interrupted does not wait a minute for one
// (jobenv.CommandTimeout) and does not start.
func TestOpeningEndsWithContext(t *testing.T) {
	src := "env:\n  SLOW: {command: 'sleep 600'}\ncommands:\n  - shell: 'true'\n"
	store := state.Store{Dir: filepath.Join(t.TempDir(), ".runner")}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	opts := Options{Context: ctx, Store: store, JobID: "c", Stdout: io.Discard, Stderr: io.Discard}
	if _, err := Start(parse(t, "w.yml", src), []byte(src), opts); !errors.Is(err, context.Canceled) {
		t.Fatalf("Start: %v, want the context's cancel", err)
	}
	if _, err := store.Open("c"); !errors.Is(err, state.ErrNotFound) {
		t.Errorf("the job exists after its start was cancelled: %v", err)
	}
}
