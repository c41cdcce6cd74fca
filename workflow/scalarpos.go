package workflow

import (
	"bytes"
	"strconv"
	"strings"
	"unicode/utf8"

	"gopkg.in/yaml.v3"
)

// errorAt records a problem at a position inside a value.
func (d *decoder) errorAt(p Pos, format string, args ...any) {
	d.errorf(&yaml.Node{Line: p.Line, Column: p.Col}, format, args...)
}

// scalarPos returns the file position of byte off of n's value: a YAML
// value is not its text in the file (quotes, escapes, the indentation and
// folded lines of a block scalar), so the value is walked along the file
// from the node's start, each of its bytes matched to the next equal byte
// of the file and an escape to the escape. Where the text cannot be found
// (a value built elsewhere), the position is the node's.
func (d *decoder) scalarPos(n *yaml.Node, off int) Pos {
	at := Pos{Line: max(n.Line, 1), Col: max(n.Column, 1)}
	r := offsetOf(d.src, n.Line, n.Column)
	if r < 0 || n.Kind != yaml.ScalarNode {
		return at
	}
	switch n.Style {
	case yaml.LiteralStyle, yaml.FoldedStyle:
		// The value starts on the line after the | or > header.
		nl := bytes.IndexByte(d.src[r:], '\n')
		if nl < 0 {
			return at
		}
		r += nl + 1
	case yaml.DoubleQuotedStyle, yaml.SingleQuotedStyle:
		r++
	}
	v, src := n.Value, d.src
	for i := 0; r < len(src); {
		if i >= len(v) || i > off {
			break
		}
		if n.Style == yaml.DoubleQuotedStyle && src[r] == '\\' {
			dec, width := yamlEscape(src[r:])
			switch {
			case dec == "" && width > 0: // an escaped line break
				r += width
				continue
			case width > 0 && strings.HasPrefix(v[i:], dec):
				if off < i+len(dec) {
					return posOf(src, r)
				}
				i, r = i+len(dec), r+width
				continue
			}
		}
		if src[r] == v[i] {
			if i == off {
				return posOf(src, r)
			}
			i++
		}
		r++
	}
	return posOf(src, r)
}

// yamlEscape decodes the escape at the start of s (a double-quoted YAML
// string's): the text it stands for and its width in s, "" for an escaped
// line break, width 0 when it is not one.
func yamlEscape(s []byte) (string, int) {
	if len(s) < 2 {
		return "", 0
	}
	simple := map[byte]string{'0': "\x00", 'a': "\a", 'b': "\b", 't': "\t", '\t': "\t", 'n': "\n", 'v': "\v", 'f': "\f", 'r': "\r",
		'e': "\x1b", ' ': " ", '"': `"`, '/': "/", '\\': `\`, 'N': "\u0085", '_': "\u00a0", 'L': "\u2028", 'P': "\u2029"}
	if dec, ok := simple[s[1]]; ok {
		return dec, 2
	}
	if s[1] == '\n' || s[1] == '\r' {
		return "", 2
	}
	digits := map[byte]int{'x': 2, 'u': 4, 'U': 8}[s[1]]
	if digits == 0 || len(s) < 2+digits {
		return "", 0
	}
	code, err := strconv.ParseUint(string(s[2:2+digits]), 16, 32)
	if err != nil {
		return "", 0
	}
	return string(rune(code)), 2 + digits
}

// offsetOf returns the byte offset in src of a line and a column (counted
// in characters, from 1), or -1 when src has no such place.
func offsetOf(src []byte, line, col int) int {
	if line < 1 || col < 1 {
		return -1
	}
	at := 0
	for l := 1; l < line; l++ {
		nl := bytes.IndexByte(src[at:], '\n')
		if nl < 0 {
			return -1
		}
		at += nl + 1
	}
	for c := 1; c < col; c++ {
		if at >= len(src) || src[at] == '\n' {
			return -1
		}
		_, size := utf8.DecodeRune(src[at:])
		at += size
	}
	return at
}

// posOf returns the line and column (in characters) of byte off of src.
func posOf(src []byte, off int) Pos {
	off = min(off, len(src))
	start := bytes.LastIndexByte(src[:off], '\n') + 1
	return Pos{Line: 1 + bytes.Count(src[:off], []byte("\n")), Col: 1 + utf8.RuneCount(src[start:off])}
}
