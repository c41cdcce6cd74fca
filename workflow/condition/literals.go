package condition

import (
	"regexp"
	"strconv"
	"strings"
	"sync"
)

// placeholderPath is a ${path} or ${path:-default} inside an expression.
var placeholderPath = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^\$\{([A-Za-z_][A-Za-z0-9_]*(?:-[A-Za-z0-9_-]*\.[A-Za-z_][A-Za-z0-9_-]*)?(?:\[[0-9]+\]|\.[A-Za-z_][A-Za-z0-9_-]*)*)(?::-([^}]*))?\}`)
})

// pathSegment is one ".name" segment of a path.
var pathSegment = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\.([A-Za-z_][A-Za-z0-9_-]*)`) })

// placeholder translates the ${...} at src[i:] and returns where it ends:
// a path is a variable reference, anything else an expression in
// parentheses. An unclosed ${ is left to expr-lang to report.
func (t *translation) placeholder(src string, i, end int) int {
	if m := placeholderPath().FindStringSubmatch(src[i:end]); m != nil {
		t.emit(exprRef(m), i)
		return i + len(m[0])
	}
	close := placeholderEnd(src, i+2, end)
	if close < 0 {
		t.copy(src, i, i+1)
		return i + 1
	}
	t.emit("(", i)
	t.tokens(src, i+2, close, true)
	t.emit(")", close)
	return close + 1
}

// placeholderEnd returns the offset of the } that closes a ${ whose text
// starts at i, skipping string literals, or -1.
func placeholderEnd(src string, i, end int) int {
	depth := 0
	for i < end {
		switch src[i] {
		case '"', '\'':
			i += quotedLen(src[i:end])
			continue
		case '{':
			depth++
		case '}':
			if depth == 0 {
				return i
			}
			depth--
		}
		i++
	}
	return -1
}

// exprRef turns a placeholder's match of placeholderPath into an expr
// reference: segments with a hyphen become ["name"] lookups (a first
// segment with one can only be a step id: ${unit-tests.exit_code} reads
// steps), a default a ?? fallback, and path.exists a test that the path
// holds a value.
func exprRef(m []string) string {
	full, def := m[1], strings.Contains(m[0], ":-")
	if first, _, _ := strings.Cut(full, "."); strings.Contains(first, "-") {
		full = "steps." + full
	}
	if base, ok := strings.CutSuffix(full, ".exists"); ok && !def {
		return "(" + pathLookups(base) + " != nil)"
	}
	path := pathLookups(full)
	if def {
		return "(" + path + " ?? " + strconv.Quote(m[2]) + ")"
	}
	return path
}

// pathLookups writes a path's members as ?. (a member of a missing value
// is nil), and those that hold a hyphen as ?.["name"] lookups.
func pathLookups(path string) string {
	return pathSegment().ReplaceAllStringFunc(path, func(seg string) string {
		if strings.Contains(seg, "-") {
			return "?.[" + strconv.Quote(seg[1:]) + "]"
		}
		return "?" + seg
	})
}

// quotedLen returns the length of the string literal at the start of s,
// its quotes included (all of s when it is not closed).
func quotedLen(s string) int {
	for i := 1; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case s[0]:
			return i + 1
		}
	}
	return len(s)
}

// stringLiteral translates the literal src[at:end]. Placeholders make it a
// concatenation: "v${x}" becomes ("v" + string(x ?? "")). A literal with a
// backslash that starts no escape is written again with the backslash
// kept; an unterminated one is copied for expr-lang to report.
func (t *translation) stringLiteral(src string, at, end int) {
	lit := src[at:end]
	q := lit[:1]
	if len(lit) < 2 || !strings.HasSuffix(lit, q) || strings.HasSuffix(lit, `\`+q) && !closedLiteral(lit) {
		t.copy(src, at, end)
		return
	}
	body := lit[1 : len(lit)-1]
	type piece struct {
		at, end int // in src
		ref     string
	}
	var pieces []piece
	from := at + 1
	for k := 0; k < len(body); {
		if body[k] == '\\' {
			k += 2
			continue
		}
		m := placeholderPath().FindStringSubmatch(body[k:])
		if body[k] != '$' || m == nil {
			k++
			continue
		}
		if at+1+k > from {
			pieces = append(pieces, piece{at: from, end: at + 1 + k})
		}
		ref := exprRef(m)
		if !strings.HasPrefix(ref, "(") {
			ref = "(" + ref + ` ?? "")`
		}
		pieces = append(pieces, piece{at: at + 1 + k, ref: "string" + ref})
		k += len(m[0])
		from = at + 1 + k
	}
	if len(pieces) == 0 {
		t.textLiteral(src, at, end)
		return
	}
	if from < end-1 {
		pieces = append(pieces, piece{at: from, end: end - 1})
	}
	t.emit("(", at)
	for n, p := range pieces {
		if n > 0 {
			t.emit(" + ", p.at)
		}
		if p.ref != "" {
			t.emit(p.ref, p.at)
			continue
		}
		t.emit(q, p.at)
		t.literalBody(src, p.at, p.end, q)
		t.emit(q, p.end)
	}
	t.emit(")", end-1)
}

// closedLiteral reports whether lit, which ends with a backslash and its
// quote, is closed: the backslashes before the last quote are even.
func closedLiteral(lit string) bool {
	n := 0
	for i := len(lit) - 2; i > 0 && lit[i] == '\\'; i-- {
		n++
	}
	return n%2 == 0
}

// textLiteral writes a literal without placeholders.
func (t *translation) textLiteral(src string, at, end int) {
	q := src[at : at+1]
	t.emit(q, at)
	t.literalBody(src, at+1, end-1, q)
	t.emit(q, end-1)
}

// literalBody copies the text of a literal, doubling a backslash that
// starts no escape expr-lang knows, so that it stays a backslash.
func (t *translation) literalBody(src string, at, end int, q string) {
	for k := at; k < end; k++ {
		if src[k] != '\\' {
			t.copy(src, k, k+1)
			continue
		}
		if strings.HasPrefix(src[k:end], `\u{`) {
			t.copy(src, k, k+3) // expr-lang's \u{XXXX}, which Go does not know
			k += 2
			continue
		}
		if _, _, tail, err := strconv.UnquoteChar(src[k:end], q[0]); err == nil {
			n := end - k - len(tail)
			t.copy(src, k, k+n)
			k += n - 1
			continue
		}
		t.emit(`\\`, k)
	}
}
