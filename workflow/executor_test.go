package workflow

import (
	"io"
	"testing"

	"github.com/runnerdev/runner/state"
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
