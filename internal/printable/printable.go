// Package printable makes text that came from commands safe to print on
// a terminal: its control characters written as escapes (`\x1b`), so that
// an item's output cannot clear the screen, retitle the window, move the
// cursor or colour runner's own lines.
package printable

import (
	"strings"
	"unicode/utf8"
)

// Text returns s with every control character escaped but newlines and
// tabs, for text that runner prints as a block of lines (a command's
// output tail under a heading, an error of several lines).
func Text(s string) string { return escape(s, true) }

// Line returns s with every control character escaped, newlines and tabs
// too, for text that must stay on one line or in one table cell.
func Line(s string) string { return escape(s, false) }

// AppendLine appends Line(s) to b.
func AppendLine(b []byte, s string) []byte {
	if clean(s, false) {
		return append(b, s...)
	}
	return appendEscaped(b, s, false)
}

func escape(s string, keepLines bool) string {
	if clean(s, keepLines) {
		return s
	}
	return string(appendEscaped(make([]byte, 0, len(s)+16), s, keepLines))
}

// clean says whether s has nothing to escape.
func clean(s string, keepLines bool) bool {
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if unsafeASCII(c, keepLines) {
				return false
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 || unsafeRune(r) {
			return false
		}
		i += n
	}
	return true
}

func appendEscaped(b []byte, s string, keepLines bool) []byte {
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case !unsafeASCII(c, keepLines):
				b = append(b, c)
			case c == '\n':
				b = append(b, `\n`...)
			case c == '\t':
				b = append(b, `\t`...)
			case c == '\r':
				b = append(b, `\r`...)
			default:
				b = appendHex(b, c)
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			b = appendHex(b, c)
		case unsafeRune(r): // all below U+10000: four digits
			b = append(b, '\\', 'u', hexDigits[r>>12&0xf], hexDigits[r>>8&0xf], hexDigits[r>>4&0xf], hexDigits[r&0xf])
		default:
			b = append(b, s[i:i+n]...)
		}
		i += n
	}
	return b
}

const hexDigits = "0123456789abcdef"

// appendHex appends c as `\xHH`.
func appendHex(b []byte, c byte) []byte {
	return append(b, '\\', 'x', hexDigits[c>>4], hexDigits[c&0xf])
}

// unsafeASCII says whether the byte c is a control character to escape.
func unsafeASCII(c byte, keepLines bool) bool {
	if keepLines && (c == '\n' || c == '\t') {
		return false
	}
	return c < 0x20 || c == 0x7f
}

// unsafeRune says whether r, beyond ASCII, is a C1 control (U+0080 to
// U+009F: a terminal may read U+009B as the start of a sequence) or a
// bidirectional control, which reorders how the rest of a line reads.
func unsafeRune(r rune) bool {
	switch {
	case r >= 0x80 && r <= 0x9f:
		return true
	case r == 0x61c, r == 0x200e, r == 0x200f:
		return true
	case r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
		return true
	}
	return false
}

// FirstLine shortens text to its first line, its surrounding space
// trimmed, at most n runes (the last one "…" when it was cut). It
// escapes nothing: Line does.
func FirstLine(s string, n int) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}
