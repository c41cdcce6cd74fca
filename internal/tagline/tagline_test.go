package tagline

import (
	"bytes"
	"fmt"
	"testing"
)

// writes records each Write it is given.
type writes struct{ calls []string }

func (w *writes) Write(p []byte) (int, error) {
	w.calls = append(w.calls, string(p))
	return len(p), nil
}

func TestWriterWritesWholeLines(t *testing.T) {
	var out writes
	tw := New(&out, "a\t")
	for _, s := range []string{"par", "tial\nsecond\nthi", "rd"} {
		tw.Write([]byte(s))
	}
	tw.Flush()
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

func TestWriterCutsLongLines(t *testing.T) {
	var out writes
	tw := New(&out, "a\t")
	tw.Write(bytes.Repeat([]byte("x"), MaxLine+10))
	tw.Flush()
	if len(out.calls) != 2 || len(out.calls[0]) != len("a\t")+MaxLine+1 || out.calls[1] != "a\txxxxxxxxxx\n" {
		t.Errorf("writes of %d bytes: %d", MaxLine+10, len(out.calls))
	}
}

func ExampleWriter() {
	var out bytes.Buffer
	w := New(&out, "vet\t")
	w.Write([]byte("ok\npart"))
	w.Flush()
	fmt.Print(out.String())
	// Output:
	// vet	ok
	// vet	part
}
