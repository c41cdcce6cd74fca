package interp

import (
	"errors"
	"fmt"
	"strings"
)

// redirect reads "<" in code: a here-string, a here-document operator or a
// plain redirection.
func (s *scanner) redirect(f *frame) {
	rest := s.src[s.i:]
	switch {
	case strings.HasPrefix(rest, "<<<"):
		s.i += 3
	case !strings.HasPrefix(rest, "<<"):
		s.i++
	case f.kind == fArith:
		if f.bare {
			s.lose("<< inside ((...)) (a shift for bash, a heredoc for dash)")
		}
		s.i += 2
	case f.kind == fParam:
		s.i += 2
	default:
		s.heredocOp()
	}
}

// heredocOp reads <<WORD or <<-WORD and queues the heredoc, whose body starts
// after the next newline.
func (s *scanner) heredocOp() {
	h := &heredoc{off: s.i, end: -1, inCmd: s.has(fCmd)}
	i := s.i + 2
	if i < len(s.src) && s.src[i] == '-' {
		h.strip = true
		i++
	}
	for i < len(s.src) && (s.src[i] == ' ' || s.src[i] == '\t') {
		i++
	}
	var d strings.Builder
	for ; i < len(s.src) && strings.IndexByte(" \t\n;&|<>()", s.src[i]) < 0; i++ {
		switch c := s.src[i]; {
		case c == '\'' || c == '"':
			j := strings.IndexByte(s.src[i+1:], c)
			if j < 0 || c == '"' && strings.ContainsAny(s.src[i+1:i+1+j], "\\`") {
				s.lose("heredoc delimiter quoting the scanner does not model")
				s.i = i
				return
			}
			d.WriteString(s.src[i+1 : i+1+j])
			h.quoted = true
			i += j + 1
		case c == '\\' && i+1 < len(s.src):
			i++
			d.WriteByte(s.src[i])
			h.quoted = true
		case c == '`' || c == '$' && i+1 < len(s.src) && strings.IndexByte("({", s.src[i+1]) >= 0:
			s.lose("expansion in a heredoc delimiter")
			s.i = i
			return
		default:
			d.WriteByte(c)
		}
	}
	if d.Len() == 0 && !h.quoted {
		s.lose("missing heredoc delimiter")
	}
	h.delim = d.String()
	s.pending = append(s.pending, h)
	s.i = i
	s.word = false
}

// newline runs at the start of each line: it ends the heredoc bodies whose
// delimiter line follows and starts the bodies queued on the line just ended.
func (s *scanner) newline() {
	for {
		if s.closeHeredoc() {
			continue
		}
		if k := s.top().kind; len(s.pending) > 0 && (k == fTop || k == fCmd || k == fBack) {
			s.startBody()
			continue
		}
		return
	}
}

// startBody starts the body of the first queued heredoc at s.i.
func (s *scanner) startBody() {
	h := s.pending[0]
	s.pending = s.pending[1:]
	if s.inHere() {
		s.lose("heredoc inside a heredoc body")
	}
	s.flush()
	h.start = len(s.t.segs)
	s.t.heredocs = append(s.t.heredocs, h)
	s.push(frame{kind: fHere, open: s.i, hd: h})
}

// closeHeredoc ends the heredoc whose delimiter line starts at s.i. The
// shell reads bodies line by line before parsing anything inside them, so
// the outermost heredoc is checked first and its delimiter line closes any
// construct still open inside it.
func (s *scanner) closeHeredoc() bool {
	k0 := 0
	for k0 < len(s.stack) && s.stack[k0].kind != fHere {
		k0++
	}
	if k0 == len(s.stack) {
		return false
	}
	line, n, joined := logicalLine(s.src[s.i:], !s.stack[k0].hd.quoted)
	for k := k0; k < len(s.stack); k++ {
		h := s.stack[k].hd
		if h == nil {
			continue
		}
		exact, bash := h.ends(line)
		if bash && !exact {
			s.lose("heredoc delimiter line with ) inside $(...) (bash ends the body, dash does not)")
		}
		if !exact {
			continue
		}
		if joined {
			s.lose("heredoc delimiter after a line continuation (bash ends the body, dash does not)")
		}
		if k != len(s.stack)-1 {
			s.lose("heredoc ended inside an unfinished construct")
		}
		s.flush()
		h.end = len(s.t.segs)
		s.stack = s.stack[:k]
		s.i += n
		s.word = true
		return true
	}
	return false
}

// logicalLine returns the line at the start of text, without its newline,
// and the bytes it spans. With join, backslash-newline pairs are removed and
// the line goes on (as in an unquoted heredoc body); joined reports that.
func logicalLine(text string, join bool) (line string, n int, joined bool) {
	var b strings.Builder
	for i := 0; i < len(text); i++ {
		switch c := text[i]; {
		case c == '\n':
			return b.String(), i + 1, joined
		case c == '\\' && join && i+1 < len(text):
			i++
			if text[i] == '\n' {
				joined = true
			} else {
				b.WriteByte(c)
				b.WriteByte(text[i])
			}
		default:
			b.WriteByte(c)
		}
	}
	return b.String(), len(text), joined
}

// ends reports whether line ends the heredoc body: exact when it is the
// delimiter line; bash also when, inside $(...), it starts with the
// delimiter and has a ")" later on: bash then ends the body and parses the
// rest of the line as code ("EOF(cmd)" runs cmd).
func (h *heredoc) ends(line string) (exact, bash bool) {
	if h.strip {
		line = strings.TrimLeft(line, "\t")
	}
	rest, ok := strings.CutPrefix(line, h.delim)
	exact = ok && rest == ""
	return exact, exact || ok && h.inCmd && strings.Contains(rest, ")")
}

// check returns an error when the expanded body has a line that would end
// the heredoc early or that dash or bash would corrupt.
func (h *heredoc) check(body string) error {
	if h.quoted && h.inCmd && (strings.Contains(body, "\x01\x01") || strings.Contains(body, "\x01\x7f")) {
		return errors.New(`the body has \x01 before \x01 or \x7f, which bash drops in a quoted heredoc inside $(...)`)
	}
	for body != "" {
		line, n, _ := logicalLine(body, !h.quoted)
		body = body[n:]
		switch _, bash := h.ends(line); {
		case bash:
			return fmt.Errorf("a value puts the delimiter line %q inside the body, which would end it early", h.delim)
		case h.dashDrops(line):
			return fmt.Errorf("a body line starts like the delimiter %q and goes on with a non-ASCII byte, which dash drops", h.delim)
		}
	}
	return nil
}

// dashDrops reports whether dash (0.5.12) would lose a byte of the line: when
// a line starts with part or all of the delimiter and goes on with a byte >=
// 0x80, its delimiter check drops that byte.
func (h *heredoc) dashDrops(line string) bool {
	if h.strip {
		line = strings.TrimLeft(line, "\t")
	}
	n := 0
	for n < len(line) && n < len(h.delim) && line[n] == h.delim[n] {
		n++
	}
	return n > 0 && n < len(line) && line[n] >= 0x80
}
