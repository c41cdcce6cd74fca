package interp

import "strings"

// frameKind is a shell construct that changes how text inside it is read.
type frameKind uint8

const (
	fTop     frameKind = iota // the command itself
	fCmd                      // $( ... )
	fBack                     // ` ... `
	fArith                    // $(( ... )) or (( ... ))
	fParam                    // a shell ${ ... } expansion that is not a placeholder
	fDouble                   // " ... "
	fSingle                   // ' ... '
	fANSI                     // $' ... '
	fComment                  // # ... up to the newline
	fHere                     // here-document body
)

// frame is one open construct on the scanner's stack.
type frame struct {
	kind  frameKind
	open  int      // offset of the opening text
	depth int      // unmatched "(" in fCmd and fArith, "{" in fParam
	dq    bool     // fParam: opened inside double quotes or a heredoc body
	bare  bool     // fArith: opened by "((", which dash reads as two subshells
	hd    *heredoc // fHere
}

// closeBack reads the backquote that ends the innermost `...`.
func (s *scanner) closeBack() {
	k := len(s.stack) - 1
	for s.stack[k].kind != fBack {
		k--
	}
	if k != len(s.stack)-1 {
		s.lose("` ends `...` inside an unfinished construct")
	}
	s.stack = s.stack[:k]
	s.word = false
	s.i++
}

// lose records that the scanner can no longer be sure of the quoting
// context; every later placeholder is refused in Shell mode.
func (s *scanner) lose(why string) {
	if s.lost == "" {
		s.lost = why + " at " + where(s.src, s.i)
	}
}

func (s *scanner) top() *frame  { return &s.stack[len(s.stack)-1] }
func (s *scanner) push(f frame) { s.stack = append(s.stack, f) }
func (s *scanner) pop()         { s.stack = s.stack[:len(s.stack)-1] }
func (s *scanner) inBack() bool { return s.has(fBack) }
func (s *scanner) inHere() bool { return s.has(fHere) }
func (s *scanner) has(k frameKind) bool {
	for _, f := range s.stack {
		if f.kind == k {
			return true
		}
	}
	return false
}

// isWord reports whether s starts with the shell word w.
func isWord(s, w string) bool {
	return strings.HasPrefix(s, w) && (len(s) == len(w) || strings.IndexByte(" \t\n;&|<>()", s[len(w)]) >= 0)
}

// context returns the context at the scanner's position.
func (s *scanner) context() context {
	if s.lost != "" {
		return context{kind: ctxUnknown, why: s.lost}
	}
	var c context
	arith, param := false, false
	for _, f := range s.stack {
		c.backquote = c.backquote || f.kind == fBack
		arith = arith || f.kind == fArith
		param = param || f.kind == fParam
	}
	f := s.top()
	switch {
	case arith:
		c.kind = ctxArith
	case param:
		c.kind = ctxParam
	case f.kind == fDouble:
		c.kind = ctxDouble
	case f.kind == fSingle:
		c.kind = ctxSingle
	case f.kind == fANSI:
		c.kind = ctxANSI
	case f.kind == fComment:
		c.kind = ctxComment
	case f.kind == fHere && f.hd.quoted:
		c.kind = ctxHereQuoted
	case f.kind == fHere:
		c.kind, c.delim, c.strip, c.head = ctxHere, f.hd.delim, f.hd.strip, s.lineHead(f.hd)
	}
	return c
}

// lineHead classifies the text between the start of the body line and s.i.
func (s *scanner) lineHead(h *heredoc) head {
	start := strings.LastIndexByte(s.src[:s.i], '\n') + 1
	a := s.src[start:s.i]
	if h.strip {
		a = strings.TrimLeft(a, "\t")
	}
	switch {
	case s.lastEnd > start || strings.HasSuffix(s.src[:start], "\\\n"):
		return headUnknown // another value, or a continued line
	case a == "":
		return headNone
	case h.delim != "" && a[0] != h.delim[0]:
		return headSafe
	}
	return headUnknown
}
