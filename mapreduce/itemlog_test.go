package mapreduce

import (
	"bytes"
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

// writes records each Write it is given.
type writes struct{ calls []string }

func (w *writes) Write(p []byte) (int, error) {
	w.calls = append(w.calls, string(p))
	return len(p), nil
}

func TestTagWriterWritesWholeLines(t *testing.T) {
	var out writes
	tw := &tagWriter{w: &out, prefix: "a\t"}
	for _, s := range []string{"par", "tial\nsecond\nthi", "rd"} {
		tw.Write([]byte(s))
	}
	tw.flush()
	want := []string{"a\tpartial\n", "a\tsecond\n", "a\tthird\n"}
	got := []string{}
	for _, c := range out.calls {
		if !bytes.HasSuffix([]byte(c), []byte("\n")) {
			t.Errorf("write %q does not end a line", c)
		}
		for _, line := range bytes.SplitAfter([]byte(c), []byte("\n")) {
			if len(line) > 0 {
				got = append(got, string(line))
			}
		}
	}
	if len(got) != len(want) {
		t.Fatalf("lines %q, want %q", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("line %d = %q, want %q", i, got[i], want[i])
		}
	}
}

func TestTagWriterCutsLongLines(t *testing.T) {
	var out writes
	tw := &tagWriter{w: &out, prefix: "a\t"}
	tw.Write(bytes.Repeat([]byte("x"), maxTagLine+10))
	tw.flush()
	if len(out.calls) != 2 || len(out.calls[0]) != len("a\t")+maxTagLine+1 || out.calls[1] != "a\txxxxxxxxxx\n" {
		t.Errorf("writes of %d bytes: %d", maxTagLine+10, len(out.calls))
	}
}
