package workflow

import (
	"context"
	"io"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/runnerdev/runner/workflow/state"
)

// BenchmarkRunStep is one step of `true` with everything runner does
// around it (events, interpolation, environment, the retry loop), to set
// against proc's BenchmarkRunTrue, the process alone.
func BenchmarkRunStep(b *testing.B) {
	src := []byte("- shell: \"true\"\n")
	wf, err := Parse("b.yml", src)
	if err != nil {
		b.Fatal(err)
	}
	j, err := Start(wf, src, Options{Store: state.Store{Dir: b.TempDir()}, JobID: "b", Stdout: io.Discard, Stderr: io.Discard})
	if err != nil {
		b.Fatal(err)
	}
	defer j.Close()
	for b.Loop() {
		if res := j.Executor.RunStep(b.Context(), wf.Steps[0], Run{Scope: j.Scope}); res.Status != StepSucceeded {
			b.Fatal(res.Err)
		}
	}
}

// countingSlot records whether it is held.
type countingSlot struct {
	mu       sync.Mutex
	held     bool
	releases int
}

func (s *countingSlot) Acquire(context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.held = true
	return nil
}

func (s *countingSlot) Release() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.held, s.releases = false, s.releases+1
}

func (s *countingSlot) state() (bool, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.held, s.releases
}

// Pause (repeat intervals, item-level retry delays) gives the slot back
// while it waits and holds it again afterwards.
func TestPauseGivesTheSlotBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		slot := &countingSlot{held: true}
		waited := make(chan bool)
		go func() {
			Pause(t.Context(), time.Second, slot)
			waited <- true
		}()
		synctest.Wait()
		if held, releases := slot.state(); held || releases != 1 {
			t.Fatalf("during the pause: held %v, releases %d", held, releases)
		}
		<-waited
		if held, _ := slot.state(); !held {
			t.Error("slot not held again after the pause")
		}
		if err := Pause(t.Context(), 0, slot); err != nil {
			t.Fatal(err)
		}
		if _, releases := slot.state(); releases != 1 {
			t.Errorf("a zero pause released the slot (%d releases)", releases)
		}
	})
}
