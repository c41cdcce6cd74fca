package cmd

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/runnerdev/runner/internal/attemptlog"
)

// countingWriter counts the writes it is given, as write(2) calls would
// (a Writer alone: io.Copy finds no ReadFrom to go round it).
type countingWriter struct {
	buf    bytes.Buffer
	writes int
}

func (w *countingWriter) Write(p []byte) (int, error) {
	w.writes++
	return w.buf.Write(p)
}

// TestLogsCopyInFewWrites: an item's log of many lines reaches stdout in
// a few large writes, not one a line, whole or one attempt of it.
func TestLogsCopyInFewWrites(t *testing.T) {
	var log strings.Builder
	for attempt := 1; attempt <= 2; attempt++ {
		log.WriteString(attemptlog.Header{Kind: attemptlog.Item, Name: "a", Attempt: attempt, Run: attemptlog.RunFirst, Start: time.Unix(0, 0)}.String() + "\n")
		for i := range 50_000 {
			fmt.Fprintf(&log, "attempt %d line %d\n", attempt, i)
		}
	}
	log.WriteString("cut")
	path := filepath.Join(t.TempDir(), "a.log")
	if err := os.WriteFile(path, []byte(log.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	second := log.String()[strings.Index(log.String(), "=== item a attempt 2"):]
	for _, tt := range []struct {
		name    string
		attempt int
		all     bool
		want    string
		end     int
	}{
		{"every attempt", 0, true, log.String(), log.Len()},
		{"whole lines", 0, false, strings.TrimSuffix(log.String(), "cut"), log.Len() - len("cut")},
		{"one attempt", 2, true, second, log.Len()},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var w countingWriter
			p := newLogPrinter(&w, tt.attempt)
			end, err := p.copyFrom(path, 0, tt.all)
			if err != nil {
				t.Fatal(err)
			}
			if w.buf.String() != tt.want || end != int64(tt.end) {
				t.Errorf("copied %d bytes up to offset %d, want %d up to %d", w.buf.Len(), end, len(tt.want), tt.end)
			}
			if max := w.buf.Len()/(64<<10) + 2; w.writes > max {
				t.Errorf("%d bytes in %d writes, want at most %d", w.buf.Len(), w.writes, max)
			}
		})
	}
}
