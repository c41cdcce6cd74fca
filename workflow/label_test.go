package workflow

import "testing"

// A step's label is its name, else its id, else its handler path, else
// its place in its phase; a standard workflow's steps are "step N".
func TestStepLabel(t *testing.T) {
	for _, c := range []struct {
		step  Step
		phase string
		want  string
	}{
		{Step{Index: 0, Name: "build", ID: "b"}, PhaseSetup, "build"},
		{Step{Index: 0, ID: "b"}, PhaseSetup, "b"},
		{Step{Index: 0, Path: "test.on_success"}, PhaseCommands, "test.on_success"},
		{Step{Index: 0}, PhaseSetup, "setup step 1"},
		{Step{Index: 0}, PhaseReduce, "reduce step 1"},
		{Step{Index: 2}, PhaseMap, "map step 3"},
		{Step{Index: 1}, PhaseCommands, "step 2"},
		{Step{Index: 1}, "", "step 2"},
	} {
		if got := c.step.Label(c.phase); got != c.want {
			t.Errorf("Label(%q) of %+v = %q, want %q", c.phase, c.step, got, c.want)
		}
	}
	if got := (&Step{Name: "build", ID: "b"}).Key(); got != "b" {
		t.Errorf("Key = %q, want the id: stored state keeps it", got)
	}
}
