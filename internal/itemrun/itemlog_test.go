package itemrun

import (
	"testing"
	"time"
)

func TestLogHeaderRoundTrip(t *testing.T) {
	start := time.Date(2026, 11, 27, 22, 50, 0, 0, time.UTC)
	for _, h := range []LogHeader{
		{ItemID: "b", Attempt: 2, Run: RunDLQRetry, Start: start},
		{ItemID: "id with ) and , in it", Attempt: 1, Run: RunResume, Start: start, Worker: "w1"},
	} {
		line := h.String()
		got, ok := ParseLogHeader(line)
		if !ok || got != h {
			t.Errorf("ParseLogHeader(%q) = %+v, %v; want %+v", line, got, ok, h)
		}
	}
	if got := (LogHeader{ItemID: "b", Attempt: 2, Run: RunDLQRetry, Start: start}).String(); got != "=== item b attempt 2 (run: dlq retry, 2026-11-27T22:50:00Z) ===" {
		t.Errorf("header %q", got)
	}
	if h, ok := ParseLogHeader("--- attempt 3 ---"); !ok || h.Attempt != 3 {
		t.Errorf("an older runner's separator: %+v, %v", h, ok)
	}
	for _, line := range []string{"=== item b attempt x (run: run, 2026-11-27T22:50:00Z) ===", "hello", "=== item b attempt 1 (run: walk, 2026-11-27T22:50:00Z) ==="} {
		if _, ok := ParseLogHeader(line); ok {
			t.Errorf("ParseLogHeader(%q) took it for a header", line)
		}
	}
}
