package job

import (
	"io"
	"path/filepath"
	"testing"
	"time"

	"github.com/runnerdev/runner/internal/eventlog"
	"github.com/runnerdev/runner/internal/state"
)

// A run whose process died recorded no end: resuming the job adds its
// time, from its start to its last event, to the time its runs took.
func TestResumeCountsTheKilledRunsTime(t *testing.T) {
	at := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	clock := func() time.Time { return at }
	src := "- shell: 'true'\n"
	store := state.Store{Dir: filepath.Join(t.TempDir(), ".runner")}
	j, err := Start(parse(t, "w.yml", src), []byte(src), Options{Store: store, JobID: "k", Stdout: io.Discard, Stderr: io.Discard, Now: clock})
	if err != nil {
		t.Fatal(err)
	}
	at = at.Add(5 * time.Second)
	j.Emit(eventlog.StepStarted("step-1", 1, "true"))
	j.close() // the process dies: no end recorded
	at = at.Add(time.Hour)
	j, err = Resume("k", Options{Store: store, Stdout: io.Discard, Stderr: io.Discard, Now: clock})
	if err != nil {
		t.Fatal(err)
	}
	defer j.close()
	if got := j.Meta().RanMS; got != 5000 {
		t.Errorf("ran_ms after the resume: %d, want 5000 (the killed run's, not the hour's pause)", got)
	}
}
