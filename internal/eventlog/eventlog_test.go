package eventlog

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/runnerdev/runner/internal/testkit"
)

func fixedNow() time.Time { return time.Date(2026, 11, 22, 10, 0, 0, 123456789, time.UTC) }

func TestEmitWritesFlatJSONLines(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.jsonl")
	l, err := Open(path, "job-1", Options{Now: fixedNow})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Emit(newEvent("step_started", map[string]any{"step": "build", "attempt": 1})); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(path)
	want := `{"time":"2026-11-22T10:00:00.123456789Z","job_id":"job-1","type":"step_started","attempt":1,"step":"build"}` + "\n"
	if string(data) != want {
		t.Errorf("got  %s\nwant %s", data, want)
	}
	info, _ := os.Stat(path)
	if info.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600", info.Mode().Perm())
	}
}

func TestReadRoundTripAndFilter(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.jsonl")
	l, _ := Open(path, "j", Options{})
	l.Emit(newEvent("a", map[string]any{"item_id": "x"}))
	l.Emit(newEvent("b", nil))
	l.Emit(newEvent("a", map[string]any{"item_id": "y"}))
	l.Close()
	all, err := Read(path, Query{})
	if err != nil || len(all) != 3 {
		t.Fatalf("Read = %d events, %v", len(all), err)
	}
	got, _ := Read(path, Query{Types: []Type{"a"}, Item: "y"})
	if len(got) != 1 || got[0].JobID != "j" || got[0].ItemID != "y" {
		t.Errorf("filtered = %+v", got)
	}
}

// The quick test on raw lines lets through lines that only mention the
// type or item; the exact test then drops them. Ids with quotes match.
func TestQueryPrefilterIsOnlyAHint(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.jsonl")
	l, _ := Open(path, "j", Options{})
	l.Emit(newEvent("c", map[string]any{"item_id": "y", "message": `"a" happened to "y"`}))
	l.Emit(newEvent("a", map[string]any{"item_id": `q"uote`}))
	l.Emit(newEvent("a", map[string]any{"item_id": "other", "message": `"q\"uote"`}))
	l.Close()
	if got, _ := Read(path, Query{Types: []Type{"a"}, Item: "y"}); len(got) != 0 {
		t.Errorf("a c event mentioning \"a\" was selected: %+v", got)
	}
	got, _ := Read(path, Query{Item: `q"uote`})
	if len(got) != 1 || got[0].Type != "a" {
		t.Errorf("quoted id: %+v", got)
	}
}

func TestReadIgnoresTornLastLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.jsonl")
	os.WriteFile(path, []byte(`{"time":"2026-11-22T10:00:00Z","job_id":"j","type":"a"}`+"\n"+`{"time":"2026-11-22T10:00:01Z","jo`), 0o600)
	got, err := Read(path, Query{})
	if err != nil || len(got) != 1 {
		t.Fatalf("Read = %v, %v; want the one complete event", got, err)
	}
}

// A log reopened after a write was cut short (a full disk) drops the torn
// line instead of continuing it: the next event starts a line of its own.
func TestOpenAfterTornWriteKeepsEventsWhole(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.jsonl")
	os.WriteFile(path, []byte(`{"time":"2026-11-22T10:00:00Z","job_id":"j","type":"a"}`+"\n"+`{"time":"2026-11-22T10:00:01Z","jo`), 0o600)
	l, err := Open(path, "j", Options{Now: fixedNow})
	if err != nil {
		t.Fatal(err)
	}
	l.Emit(newEvent("b", nil))
	l.Close()
	got, err := Read(path, Query{})
	if err != nil || len(got) != 2 || got[0].Type != "a" || got[1].Type != "b" {
		t.Fatalf("Read = %v, %v; want events a and b", got, err)
	}
}

func TestReadReportsDamage(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.jsonl")
	os.WriteFile(path, []byte("not json\n"), 0o600)
	if _, err := Read(path, Query{}); err == nil || !strings.Contains(err.Error(), "damaged entry at byte 0") {
		t.Fatalf("err = %v", err)
	}
}

func TestRedact(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.jsonl")
	l, _ := Open(path, "j", Options{Redact: strings.NewReplacer("hunter2", "***").Replace})
	e, _ := l.Emit(newEvent("a", map[string]any{"msg": "pw hunter2", "nested": map[string]any{"l": []any{"hunter2"}}, "n": 3, "item_id": "hunter2"}))
	l.Close()
	data, _ := os.ReadFile(path)
	if strings.Contains(string(data), "hunter2") || e.Str("msg") != "pw ***" || e.ItemID != "***" {
		t.Errorf("secret leaked: %s, %+v", data, e)
	}
}

func TestConcurrentEmitKeepsLinesWhole(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.jsonl")
	l, _ := Open(path, "j", Options{})
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 100; i++ {
				l.Emit(newEvent("tick", map[string]any{"payload": strings.Repeat("x", 500)}))
			}
		}()
	}
	wg.Wait()
	l.Close()
	got, err := Read(path, Query{})
	if err != nil || len(got) != 800 {
		t.Fatalf("Read = %d, %v", len(got), err)
	}
}

func TestFollowStopsAtEndEvent(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.jsonl")
	l, _ := Open(path, "j", Options{})
	l.Emit(newEvent("start", nil))
	following := make(chan struct{}) // Follow has read what was there
	go func() {
		<-following
		l.Emit(newEvent("middle", nil))
		l.Emit(newEvent("end", nil))
	}()
	ctx, cancel := context.WithTimeout(t.Context(), testkit.Scale(10*time.Second))
	defer cancel()
	var seen []string
	ended := false
	see := func(e Event) error {
		if seen = append(seen, string(e.Type)); len(seen) == 1 {
			close(following)
		}
		return nil
	}
	err := Follow(ctx, path, Query{}, see,
		Until{See: func(e Event) { ended = e.Type == "end" }, Done: func() (bool, error) { return ended, nil }})
	if err != nil || strings.Join(seen, ",") != "start,middle,end" {
		t.Fatalf("seen %v, err %v", seen, err)
	}
}

// BenchmarkEmit is the cost of one event: marshal and one write.
func BenchmarkEmit(b *testing.B) {
	l, err := Open(filepath.Join(b.TempDir(), "events.jsonl"), "job", Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	fields := map[string]any{"item_id": "item_42", "step": "process", "attempt": 1, "duration_ms": int64(12)}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := l.Emit(newEvent("attempt_succeeded", fields)); err != nil {
			b.Fatal(err)
		}
	}
}

// Raw passes lines as written, and still refuses a damaged one.
func TestRawCopiesLinesAndRefusesDamage(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.jsonl")
	l, _ := Open(path, "j", Options{})
	l.Emit(newEvent("a", map[string]any{"item_id": "x"}))
	l.Emit(newEvent("b", nil))
	l.Close()
	var lines []string
	if err := Raw(path, Query{}, func(line []byte) error { lines = append(lines, string(line)); return nil }); err != nil || len(lines) != 2 {
		t.Fatalf("Raw = %v, %v", lines, err)
	}
	if !strings.Contains(lines[0], `"type":"a"`) {
		t.Errorf("line not as written: %s", lines[0])
	}
	f, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString("{not json\n")
	f.Close()
	err := Raw(path, Query{}, func([]byte) error { return nil })
	if err == nil || !strings.Contains(err.Error(), "damaged entry at byte") {
		t.Errorf("damaged line: %v", err)
	}
}

// Int reads a whole number as a constructor wrote it and as the log gives
// it back.
func TestEventInt(t *testing.T) {
	e := Event{Fields: map[string]any{"a": 3, "b": int64(4), "c": json.Number("5"), "d": 6.0, "s": "7"}}
	for name, want := range map[string]int64{"a": 3, "b": 4, "c": 5, "d": 6, "s": 0, "missing": 0} {
		if got := e.Int(name); got != want {
			t.Errorf("Int(%q) = %d, want %d", name, got, want)
		}
	}
}

// Coalesce writes an event whose sequel follows at once together with
// that sequel (one write: one time stamp), keeps each item's events in
// order, writes every held event before an event of the job's own, and
// the rest when the log closes.
func TestCoalesceWritesAnEventWithItsSequel(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.jsonl")
	tick := 0
	l, err := Open(path, "j", Options{Now: func() time.Time { tick++; return fixedNow().Add(time.Duration(tick) * time.Second) }})
	if err != nil {
		t.Fatal(err)
	}
	emit := func(events ...Event) {
		t.Helper()
		if _, err := l.Coalesce(events...); err != nil {
			t.Fatal(err)
		}
	}
	emit(StepStarted("s", 1, "true").WithItem("a"))
	emit(StepStarted("s", 1, "true").WithItem("b"))
	emit(AttemptStarted("s", 1).WithItem("a"))
	emit(AttemptSucceeded("s", 1, 0).WithItem("a"))
	emit(StepCompleted("s", 0, 0).WithItem("a"), ItemSucceeded("a", 1, 0))
	emit(AttemptStarted("s", 1).WithItem("b"))
	emit(AttemptFailed(Failure{Step: "s", Attempt: 1}).WithItem("b"))
	emit(CircuitChanged("open", "step", "s"))
	emit(StepStarted("s", 1, "true").WithItem("c"))
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	events, err := Read(path, Query{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range events {
		got = append(got, fmt.Sprintf("%d %s %s", e.Time.Sub(fixedNow())/time.Second, e.ItemID, e.Type))
	}
	want := []string{
		"1 a step_started", "1 a attempt_started",
		"2 a attempt_succeeded", "2 a step_completed", "2 a item_succeeded",
		"3 b step_started", "3 b attempt_started",
		"4 b attempt_failed", "4  circuit_opened",
		"5 c step_started",
	}
	if !slices.Equal(got, want) {
		t.Errorf("events (time, item, type):\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// Last reads the last complete event from the log's end: a torn last
// line and blank lines are passed over, a last line longer than one read
// is read whole, and an empty log has none.
func TestLastEvent(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.jsonl")
	event := func(sec int, field string) string {
		return fmt.Sprintf(`{"time":"2026-11-22T10:00:%02dZ","job_id":"j","type":"a","f":%q}`, sec, field)
	}
	for _, tc := range []struct {
		name, log string
		want      string // the field f of the event; "" none
	}{
		{"empty", "", ""},
		{"torn only", `{"time":"2026`, ""},
		{"one", event(1, "one") + "\n", "one"},
		{"torn last", event(1, "one") + "\n" + event(2, "two") + "\n" + `{"time":"20`, "two"},
		{"blank lines", event(1, "one") + "\n\n  \n", "one"},
		{"long", event(1, "one") + "\n" + event(2, strings.Repeat("l", 200<<10)) + "\n", strings.Repeat("l", 200<<10)},
	} {
		os.WriteFile(path, []byte(tc.log), 0o600)
		e, ok, err := Last(path)
		if err != nil || ok != (tc.want != "") || ok && e.Fields["f"] != tc.want {
			t.Errorf("%s: Last = %.40v, %v, %v; want f %.20q", tc.name, e.Fields["f"], ok, err, tc.want)
		}
	}
}
