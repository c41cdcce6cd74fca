package interp

import (
	"strings"
)

// scanner reads a template the way sh would, splitting it into literal text
// and placeholders, each tagged with the context it stands in.
type scanner struct {
	src     string
	i       int // next byte to read
	lit     int // start of the literal text not yet flushed
	stack   []frame
	word    bool // at the start of a word
	pending []*heredoc
	lost    string // why the quoting context is no longer known; "" while it is
	lastEnd int    // end of the last placeholder
	t       *Template
}

// Parse parses a command template. The only errors are malformed placeholders
// (a bad filter) and a shell "${" with no closing brace.
func Parse(src string) (*Template, error) {
	s := &scanner{src: src, stack: []frame{{kind: fTop}}, word: true, t: &Template{src: src}}
	for s.i < len(src) {
		if err := s.step(); err != nil {
			return nil, err
		}
	}
	s.flush()
	for _, h := range s.t.heredocs {
		if h.end < 0 {
			h.end = len(s.t.segs)
		}
	}
	if s.lost == "" {
		for _, f := range s.stack {
			if f.kind == fParam {
				return nil, &SyntaxError{Offset: f.open, Msg: `unterminated "${"`, src: src}
			}
		}
	}
	return s.t, nil
}

// step reads one byte or construct.
func (s *scanner) step() error {
	f := s.top()
	c := s.src[s.i]
	if s.inBack() {
		// Inside backquotes sh first removes the backslash of \\, \` and \$;
		// the scanner does not model that second pass.
		if c == '\\' && s.i+1 < len(s.src) && strings.IndexByte("\\`$", s.src[s.i+1]) >= 0 {
			s.lose("backslash escape inside `...`")
			s.i += 2
			return nil
		}
		if c == '`' {
			s.closeBack()
			return nil
		}
	}
	switch f.kind {
	case fSingle, fANSI, fComment:
		return s.stepLiteral(f, c)
	case fHere:
		if f.hd.quoted {
			return s.stepLiteral(f, c)
		}
		return s.stepDouble(f, c)
	case fDouble:
		return s.stepDouble(f, c)
	default:
		return s.stepCode(f, c)
	}
}

// stepLiteral reads text where sh expands nothing: single quotes, $'...',
// comments and quoted heredoc bodies. Placeholders still apply there.
func (s *scanner) stepLiteral(f *frame, c byte) error {
	switch {
	case c == '\n' && f.kind == fComment:
		s.pop() // the enclosing frame reads the newline
	case c == '\n':
		s.i++
		s.newline()
	case c == '\'' && (f.kind == fSingle || f.kind == fANSI):
		s.pop()
		s.i++
	case c == '\\' && strings.HasPrefix(s.src[s.i:], "\\\n") && f.kind != fHere && s.inHere():
		// An unquoted heredoc body is read with \<newline> removed.
		s.lose("\\<newline> inside quotes in a heredoc body")
		s.i += 2
	case c == '\\' && f.kind == fANSI:
		if strings.HasPrefix(s.src[s.i:], `\'`) {
			s.lose(`\' inside $'...' (dash and bash disagree)`)
		}
		s.skipEscape()
	case c == '$' && strings.HasPrefix(s.src[s.i:], "${"):
		p, err := parseBraced(s.src, s.i)
		switch {
		case err != nil:
			return err
		case p != nil:
			s.emit(p)
		default:
			s.literalExpansion()
		}
	case c == '$' && strings.HasPrefix(s.src[s.i:], "$("):
		s.literalExpansion()
	case c == '$':
		if p := parseName(s.src, s.i); p != nil {
			p.inert = true
			s.emit(p)
			return nil
		}
		s.i++
	default:
		s.i++
	}
	return nil
}

// literalExpansion reads "${" or "$(" that sh leaves as text. Bash still
// parses them inside "`...`", so there the scanner gives up.
func (s *scanner) literalExpansion() {
	for k := 1; k < len(s.stack); k++ {
		if s.stack[k].kind == fBack && s.stack[k-1].kind == fDouble {
			s.lose("quoted $( or ${ inside \"`...`\" (bash parses it)")
		}
	}
	s.i += 2
}

// stepDouble reads text inside double quotes or an unquoted heredoc body.
func (s *scanner) stepDouble(f *frame, c byte) error {
	switch c {
	case '"':
		if f.kind == fDouble {
			s.pop()
		}
		s.i++
	case '\\':
		s.skipEscape()
	case '$':
		return s.dollar()
	case '`':
		s.push(frame{kind: fBack, open: s.i})
		s.i++
	case '\n':
		s.i++
		s.newline()
	default:
		s.i++
	}
	return nil
}

// stepCode reads unquoted shell code: the command, $(...), `...`,
// arithmetic and the inside of a shell ${...}.
func (s *scanner) stepCode(f *frame, c byte) error {
	atWord := s.word
	s.word = strings.IndexByte(" \t\n;&|<>()", c) >= 0
	switch c {
	case '\n':
		s.i++
		s.newline()
	case '<':
		s.redirect(f)
	case '(':
		if atWord && (f.kind == fTop || f.kind == fCmd || f.kind == fBack) && strings.HasPrefix(s.src[s.i:], "((") {
			s.push(frame{kind: fArith, open: s.i, bare: true})
			s.i += 2
			return nil
		}
		if f.kind == fCmd || f.kind == fArith {
			f.depth++
		}
		s.i++
	case ')':
		s.closeParen(f)
	case '{':
		if f.kind == fParam {
			f.depth++
		}
		s.i++
	case '}':
		if f.kind == fParam && f.depth == 0 {
			s.pop()
		} else if f.kind == fParam {
			f.depth--
		}
		s.i++
	case '\'':
		if f.kind == fParam && f.dq {
			s.lose("' inside a double-quoted ${...} (dash and bash disagree)")
		} else {
			s.push(frame{kind: fSingle, open: s.i})
		}
		s.i++
	case '"':
		s.push(frame{kind: fDouble, open: s.i})
		s.i++
	case '\\':
		s.skipEscape()
	case '$':
		return s.dollar()
	case '`':
		s.push(frame{kind: fBack, open: s.i})
		s.word = true
		s.i++
	case '#':
		if atWord && (f.kind == fTop || f.kind == fCmd || f.kind == fBack) {
			s.push(frame{kind: fComment, open: s.i})
		}
		s.i++
	default:
		if atWord && f.kind == fCmd && isWord(s.src[s.i:], "case") {
			// A case pattern's ")" would look like the end of $(...).
			s.lose("case inside $(...)")
		}
		s.i++
	}
	return nil
}

// closeParen reads ")" in code.
func (s *scanner) closeParen(f *frame) {
	switch {
	case (f.kind == fCmd || f.kind == fArith) && f.depth > 0:
		f.depth--
	case f.kind == fCmd:
		s.pop()
		s.word = false
	case f.kind == fArith && strings.HasPrefix(s.src[s.i:], "))"):
		s.pop()
		s.word = false
		s.i++
	case f.kind == fArith:
		s.lose("unbalanced ) inside ((...))")
		s.pop()
	}
	s.i++
}

// skipEscape reads a backslash and the byte it escapes.
func (s *scanner) skipEscape() { s.i = min(s.i+2, len(s.src)) }
