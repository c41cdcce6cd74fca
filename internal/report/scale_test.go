package report

import (
	"slices"
	"testing"
	"time"
)

// The time axis ticks at round values of one unit: 1, 2 or 5 times a
// power of ten, from zero, never more than maxTicks steps.
func TestTicksAreRound(t *testing.T) {
	cases := []struct {
		active time.Duration
		labels []string
	}{
		{0, []string{"0"}},
		{700 * time.Microsecond, []string{"0"}},
		{5 * time.Millisecond, []string{"0", "1 ms", "2 ms", "3 ms", "4 ms", "5 ms"}},
		{1300 * time.Millisecond, []string{"0", "500 ms", "1000 ms"}},
		{7 * time.Second, []string{"0", "2 s", "4 s", "6 s"}},
		{47 * time.Second, []string{"0", "10 s", "20 s", "30 s", "40 s"}},
		{100 * time.Second, []string{"0", "20 s", "40 s", "60 s", "80 s", "100 s"}},
		{137 * time.Second, []string{"0", "1 min", "2 min"}},
		{13 * time.Minute, []string{"0", "5 min", "10 min"}},
		{3*time.Hour + 10*time.Minute, []string{"0", "1 h", "2 h", "3 h"}},
		{50 * time.Hour, []string{"0", "10 h", "20 h", "30 h", "40 h", "50 h"}},
	}
	for _, c := range cases {
		at, labels := ticks(c.active)
		if !slices.Equal(labels, c.labels) {
			t.Errorf("ticks(%v) = %q, want %q", c.active, labels, c.labels)
		}
		if len(at) != len(labels) || at[0] != 0 || at[len(at)-1] > c.active || len(at)-1 > maxTicks {
			t.Errorf("ticks(%v) at %v", c.active, at)
		}
	}
}
