package executor

import (
	"testing"
	"time"
)

// ${date:FORMAT} takes chrono's strftime specifiers.
func TestStrftime(t *testing.T) {
	at := time.Date(2025, 1, 5, 14, 3, 9, 120, time.UTC)
	for format, want := range map[string]string{
		"%Y-%m-%d":          "2025-01-05",
		"%F %T":             "2025-01-05 14:03:09",
		"%y%m%d-%H%M%S":     "250105-140309",
		"%j %a %A %b %B %e": "005 Sun Sunday Jan January  5",
		"%I %p %s %u %w":    "02 PM 1736085789 7 0",
		"100%% %Q %":        "100% %Q %",
	} {
		if got := strftime(at, format); got != want {
			t.Errorf("strftime(%q) = %q, want %q", format, got, want)
		}
	}
}
