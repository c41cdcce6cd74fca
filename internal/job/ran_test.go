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
// time, from its start to its last event, to the time its runs took. Its
// start is in the job's metadata (run_started); a job that an older
// runner started has none, and its log is read for the run's start
// event.
func TestResumeCountsTheKilledRunsTime(t *testing.T) {
	for _, older := range []bool{false, true} {
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
		if older {
			st, err := store.Open("k")
			if err != nil {
				t.Fatal(err)
			}
			st.Meta.RunStarted = time.Time{}
			if err := st.Save(); err != nil {
				t.Fatal(err)
			}
		}
		at = at.Add(time.Hour)
		j, err = Resume("k", Options{Store: store, Stdout: io.Discard, Stderr: io.Discard, Now: clock})
		if err != nil {
			t.Fatal(err)
		}
		if got := j.Meta().RanMS; got != 5000 {
			t.Errorf("older runner's job %v: ran_ms after the resume: %d, want 5000 (the killed run's, not the hour's pause)", older, got)
		}
		j.close()
	}
}
