package attemptlog

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestHeaderRoundTrip(t *testing.T) {
	start := time.Date(2026, 11, 27, 22, 50, 0, 0, time.UTC)
	for _, h := range []Header{
		{Kind: Item, Name: "b", Attempt: 2, Run: RunDLQRetry, Start: start},
		{Kind: Item, Name: "id with ) and , in it", Attempt: 1, Run: RunResume, Start: start, Worker: "w1"},
		{Kind: Step, Name: "setup step 2", Attempt: 3, Run: RunFirst, Start: start},
	} {
		line := h.String()
		got, ok := ParseHeader(line)
		if !ok || got != h {
			t.Errorf("ParseHeader(%q) = %+v, %v; want %+v", line, got, ok, h)
		}
		if !MayBeHeader([]byte(line)) {
			t.Errorf("MayBeHeader(%q) = false", line)
		}
	}
	if got := (Header{Kind: Item, Name: "b", Attempt: 2, Run: RunDLQRetry, Start: start}).String(); got != "=== item b attempt 2 (run: dlq retry, 2026-11-27T22:50:00Z) ===" {
		t.Errorf("header %q", got)
	}
	if h, ok := ParseHeader("--- attempt 3 ---"); !ok || h.Attempt != 3 {
		t.Errorf("an older runner's separator: %+v, %v", h, ok)
	}
	for _, line := range []string{"=== item b attempt x (run: run, 2026-11-27T22:50:00Z) ===", "hello", "=== item b attempt 1 (run: walk, 2026-11-27T22:50:00Z) ===", "=== job b attempt 1 (run: run, 2026-11-27T22:50:00Z) ==="} {
		if _, ok := ParseHeader(line); ok {
			t.Errorf("ParseHeader(%q) took it for a header", line)
		}
	}
}

// A log is made on its first write, each attempt's output after its
// header; an attempt that printed nothing leaves no header.
func TestFileAttempts(t *testing.T) {
	path := filepath.Join(t.TempDir(), "logs", "steps", "commands-1.log")
	start := time.Date(2026, 11, 27, 22, 50, 0, 0, time.UTC)
	l := Open(path)
	l.Begin(Header{Kind: Step, Name: "vet", Attempt: 1, Run: RunFirst, Start: start})
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("the log exists before a write: %v", err)
	}
	l.Write([]byte("one\n"))
	l.Begin(Header{Kind: Step, Name: "vet", Attempt: 2, Run: RunFirst, Start: start})
	l.Begin(Header{Kind: Step, Name: "vet", Attempt: 3, Run: RunFirst, Start: start})
	l.Write([]byte("three\n"))
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	Append(path, Header{Kind: Step, Name: "vet", Attempt: 1, Run: RunResume, Start: start}, "again\n")
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want := "=== step vet attempt 1 (run: run, 2026-11-27T22:50:00Z) ===\none\n" +
		"=== step vet attempt 3 (run: run, 2026-11-27T22:50:00Z) ===\nthree\n" +
		"=== step vet attempt 1 (run: resume, 2026-11-27T22:50:00Z) ===\nagain\n"
	if string(got) != want {
		t.Errorf("log:\n%s\nwant:\n%s", got, want)
	}
}
