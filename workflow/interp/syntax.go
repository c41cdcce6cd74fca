package interp

import (
	"fmt"
	"slices"
	"strings"
)

// defaultStop are the bytes that end the literal text of a ":-" default.
// Apart from "}" and a nested placeholder, one of them makes the text a
// shell expansion such as ${A:-$B} or ${A:-'x}'}, whose end only the
// shell's own quoting rules decide.
const defaultStop = "}'\"`$\\{"

// maxNesting bounds placeholders nested in defaults.
const maxNesting = 8

// parseBraced reads ${path}, ${path:-default} or ${path|filter} at src[i:].
// It returns nil and no error when the text is not placeholder syntax, such
// as the shell expansions ${var%%.*} or ${#arr}.
func parseBraced(src string, i int) (*placeholder, error) { return parseNested(src, i, 0) }

// prodigyDefault starts Prodigy's spelling of a default: ${path|default:text}.
const prodigyDefault = "|default:"

// parseNested is parseBraced for a placeholder nested depth defaults deep.
func parseNested(src string, i, depth int) (*placeholder, error) {
	j := i + 2
	if p, err := parseComputed(src, i); p != nil || err != nil {
		return p, err
	}
	n := scanPath(src[j:])
	if n == 0 {
		return nil, nil
	}
	p := &placeholder{off: i, path: src[j : j+n]}
	j += n
	rest := src[j:]
	switch {
	case strings.HasPrefix(rest, "}"):
		j++
	case strings.HasPrefix(rest, ":-"), strings.HasPrefix(rest, prodigyDefault):
		// ${path|default:text} is Prodigy's spelling of ${path:-text}.
		mark := len(":-")
		if strings.HasPrefix(rest, prodigyDefault) {
			mark = len(prodigyDefault)
		}
		def, n, err := parseDefault(src, j+mark, depth)
		if def == nil || err != nil {
			return nil, err
		}
		p.def = def
		j += mark + n + 1
		if mark == len(prodigyDefault) {
			p.shell = "${" + p.path + ":-" + src[j-1-n:j-1] + "}"
		}
	case strings.HasPrefix(rest, "|"):
		k := 1
		for k < len(rest) && isLetter(rest[k]) {
			k++
		}
		name := rest[1:k]
		if end := strings.IndexByte(rest, '}'); k < len(rest) && rest[k] == ':' && end > k {
			// A filter with an argument, ${x|length:100}: neither runner
			// nor Prodigy has one (Prodigy leaves the text as written).
			p.filter = asWritten
			j += end + 1
			break
		}
		if k == len(rest) || rest[k] != '}' {
			return nil, &SyntaxError{Offset: i, Msg: fmt.Sprintf("bad filter in placeholder (want ${%s|raw} or ${%s|json})", p.path, p.path), src: src}
		}
		if name != "raw" && name != "json" {
			return nil, &SyntaxError{Offset: i, Msg: fmt.Sprintf("unknown filter %q in placeholder (want raw or json)", name), src: src}
		}
		p.filter = name
		j += k + 1
	default:
		return nil, nil
	}
	p.src = src[i:j]
	return p, nil
}

// parseComputed reads a computed placeholder such as ${file:VERSION} or
// ${cmd:awk '{print $1}' f} at src[i:], up to the brace that closes it
// (braces inside it balanced); nil when the text is no such placeholder.
func parseComputed(src string, i int) (*placeholder, error) {
	j := i + 2
	kind, _, _ := strings.Cut(src[j:min(len(src), j+5)], ":")
	if !slices.Contains(computedKinds, kind) || !strings.HasPrefix(src[j+len(kind):], ":") {
		return nil, nil
	}
	depth := 0
	for k := j; k < len(src); k++ {
		switch src[k] {
		case '{':
			depth++
		case '}':
			if depth > 0 {
				depth--
				continue
			}
			if _, _, ok := Computed(src[j:k]); !ok {
				return nil, nil // the shell's ${file:-x}, ${file:1}
			}
			return &placeholder{off: i, path: src[j:k], src: src[i : k+1]}, nil
		}
	}
	return nil, &SyntaxError{Offset: i, Msg: `unterminated "${"`, src: src}
}

// parseDefault reads the default that starts at src[i:] up to its closing
// brace: literal text and nested placeholders, such as out/${item}. It
// returns the parts and their length, or nil when the text is a shell
// expansion rather than a default.
func parseDefault(src string, i, depth int) ([]segment, int, error) {
	def := []segment{}
	for j := i; ; {
		k := strings.IndexAny(src[j:], defaultStop)
		if k < 0 {
			return nil, 0, nil
		}
		if k > 0 {
			def = append(def, segment{lit: src[j : j+k]})
		}
		j += k
		switch {
		case src[j] == '}':
			return def, j - i, nil
		case !strings.HasPrefix(src[j:], "${"):
			return nil, 0, nil
		case depth == maxNesting:
			return nil, 0, &SyntaxError{Offset: j, Msg: fmt.Sprintf("placeholders nested more than %d deep", maxNesting), src: src}
		}
		p, err := parseNested(src, j, depth+1)
		if p == nil || err != nil {
			return nil, 0, err
		}
		def = append(def, segment{ph: p})
		j += len(p.src)
	}
}

// parseName reads $NAME at src[i:]; it returns nil when no name follows.
func parseName(src string, i int) *placeholder {
	n := scanIdent(src[i+1:], false)
	if n == 0 {
		return nil
	}
	return &placeholder{off: i, path: src[i+1 : i+1+n], src: src[i : i+1+n]}
}

// scanPath returns the length of the path at the start of s, or 0: segments
// separated by ".", each optionally followed by [N] indexes. Segments after
// the first may contain "-" (step names), which no shell parameter can.
func scanPath(s string) int {
	i := 0
	for seg := 0; ; seg++ {
		n := scanIdent(s[i:], seg > 0)
		if seg == 0 {
			n = firstSegment(s, n)
		}
		if n == 0 {
			return 0
		}
		i += n
		for i < len(s) && s[i] == '[' {
			d := i + 1
			for d < len(s) && isDigit(s[d]) {
				d++
			}
			if d == i+1 || d == len(s) || s[d] != ']' {
				return 0
			}
			i = d + 1
		}
		if i == len(s) || s[i] != '.' {
			return i
		}
		i++
	}
}

// firstSegment returns the length of the path's first segment, n bytes
// without hyphens: a name with hyphens followed by "." is Prodigy's step id
// (${test-step.output}), where sh would see no variable either, while
// ${NAME-word} stays sh's default.
func firstSegment(s string, n int) int {
	if n == len(s) || s[n] != '-' {
		return n
	}
	if m := scanIdent(s, true); m < len(s) && s[m] == '.' {
		return m
	}
	return n
}

// scanIdent returns the length of the identifier at the start of s.
func scanIdent(s string, hyphen bool) int {
	if s == "" || !(isLetter(s[0]) || s[0] == '_') {
		return 0
	}
	i := 1
	for i < len(s) && (isLetter(s[i]) || isDigit(s[i]) || s[i] == '_' || hyphen && s[i] == '-') {
		i++
	}
	return i
}

func isLetter(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }
func isDigit(c byte) bool  { return '0' <= c && c <= '9' }

// dollar reads "$" where sh expands it.
func (s *scanner) dollar() error {
	f, rest := s.top(), s.src[s.i:]
	inDQ := f.kind == fDouble || f.kind == fHere || f.kind == fParam && f.dq
	s.word = false
	switch {
	case strings.HasPrefix(rest, "${"):
		p, err := parseBraced(s.src, s.i)
		if err != nil {
			return err
		}
		if p != nil {
			s.emit(p)
			return nil
		}
		s.push(frame{kind: fParam, open: s.i, dq: inDQ})
		s.i += 2
	case strings.HasPrefix(rest, "$(("):
		s.push(frame{kind: fArith, open: s.i})
		s.i += 3
	case strings.HasPrefix(rest, "$("):
		s.push(frame{kind: fCmd, open: s.i})
		s.word = true
		s.i += 2
	case strings.HasPrefix(rest, "$'") && !inDQ:
		s.push(frame{kind: fANSI, open: s.i})
		s.i += 2
	case len(rest) > 1 && strings.IndexByte("$#?@*!-0123456789", rest[1]) >= 0:
		s.i += 2 // special parameter such as $$ or $#
	default:
		if p := parseName(s.src, s.i); p != nil {
			s.emit(p)
			return nil
		}
		s.i++
	}
	return nil
}

// emit records the placeholder p, which starts at s.i.
func (s *scanner) emit(p *placeholder) {
	s.flush()
	p.ctx = s.context()
	s.t.segs = append(s.t.segs, segment{ph: p})
	s.i += len(p.src)
	s.lit, s.lastEnd = s.i, s.i
	s.word = false
}

// flush records the literal text read since the last segment.
func (s *scanner) flush() {
	if s.i > s.lit {
		s.t.segs = append(s.t.segs, segment{lit: s.src[s.lit:s.i]})
	}
	s.lit = s.i
}
