package itemtask

import (
	"bytes"
	"testing"
)

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
