package remote

import "testing"

// A run's name, as its events are recorded with it, reads back as the
// run; anything else is not a run.
func TestRunIDReadsBackFromItsText(t *testing.T) {
	run := RunID{Epoch: 2, Sent: 1, Delivery: 3}
	if got, ok := ParseRunID(run.String()); !ok || got != run {
		t.Errorf("ParseRunID(%q) = %+v, %v; want %+v", run.String(), got, ok, run)
	}
	for _, s := range []string{"", "2.0", "2.0.1x", "a.b.c"} {
		if _, ok := ParseRunID(s); ok {
			t.Errorf("ParseRunID(%q) read a run", s)
		}
	}
}
