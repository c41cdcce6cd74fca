package printable

import (
	"testing"
)

func TestEscapes(t *testing.T) {
	tests := []struct {
		in, line, text string
	}{
		{"plain words, é and 日本", "plain words, é and 日本", "plain words, é and 日本"},
		{"\x1b]0;title\x07\x1b[2Jred", `\x1b]0;title\x07\x1b[2Jred`, `\x1b]0;title\x07\x1b[2Jred`},
		{"a\nb\tc\rd", `a\nb\tc\rd`, "a\nb\tc\\rd"},
		{"nul\x00del\x7f", `nul\x00del\x7f`, `nul\x00del\x7f`},
		{"csi\u009b31m", `csi\u009b31m`, `csi\u009b31m`},
		{"rtl\u202eevil\u2066", `rtl\u202eevil\u2066`, `rtl\u202eevil\u2066`},
		{"bad\xffbyte", `bad\xffbyte`, `bad\xffbyte`},
		{"", "", ""},
	}
	for _, tt := range tests {
		if got := Line(tt.in); got != tt.line {
			t.Errorf("Line(%q) = %q, want %q", tt.in, got, tt.line)
		}
		if got := Text(tt.in); got != tt.text {
			t.Errorf("Text(%q) = %q, want %q", tt.in, got, tt.text)
		}
		if got := string(AppendLine([]byte("> "), tt.in)); got != "> "+tt.line {
			t.Errorf("AppendLine(%q) = %q, want %q", tt.in, got, "> "+tt.line)
		}
	}
}

func TestCleanTextIsNotCopied(t *testing.T) {
	s := "nothing to escape here"
	if n := testing.AllocsPerRun(100, func() { _ = Line(s) }); n != 0 {
		t.Errorf("Line of clean text allocated %v times", n)
	}
}

func FuzzLineHasNoControls(f *testing.F) {
	f.Add("\x1b[2J\u009b\u202e\xff\n")
	f.Fuzz(func(t *testing.T, s string) {
		for _, r := range Line(s) {
			if r < 0x20 || r == 0x7f || unsafeRune(r) {
				t.Fatalf("Line(%q) keeps %U", s, r)
			}
		}
	})
}

// FirstLine keeps the first line of text, trimmed, cut at n runes with
// an ellipsis as the last.
func TestFirstLine(t *testing.T) {
	for _, c := range []struct {
		in   string
		n    int
		want string
	}{
		{"  one\ntwo", 10, "one"},
		{"héllo wörld", 5, "héll…"},
		{"exact", 5, "exact"},
		{"", 3, ""},
	} {
		if got := FirstLine(c.in, c.n); got != c.want {
			t.Errorf("FirstLine(%q, %d) = %q, want %q", c.in, c.n, got, c.want)
		}
	}
}
