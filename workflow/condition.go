package workflow

import (
	"regexp"
	"strconv"
	"strings"
)

// translation is a condition rewritten from Prodigy's syntax into
// expr-lang's, with, for each byte of the result, the byte of the original
// text it came from, so that an error expr-lang finds in the result is
// reported at its place in the file.
type translation struct {
	out  strings.Builder
	from []int
}

// copy appends src[at:end] unchanged.
func (t *translation) copy(src string, at, end int) {
	t.out.WriteString(src[at:end])
	for i := at; i < end; i++ {
		t.from = append(t.from, i)
	}
}

// emit appends text that stands for the original text at origin.
func (t *translation) emit(text string, origin int) {
	t.out.WriteString(text)
	for range len(text) {
		t.from = append(t.from, origin)
	}
}

// origin returns the offset in the original text of byte i of the result
// (the end of the original for the result's end).
func (t *translation) origin(i, srcLen int) int {
	if i >= 0 && i < len(t.from) {
		return t.from[i]
	}
	return srcLen
}

// prodigyFunctions are the functions of Prodigy's filter syntax. A call
// is renamed to the function's internal name (prodigy_NAME) so that a
// field of the same name, such as an item's length, stays a field; errors
// name it as written.
var prodigyFunctions = []string{"is_null", "is_not_null", "contains", "starts_with", "ends_with", "matches", "length"}

const prodigyPrefix = "prodigy_"

// prodigyWords are Prodigy's upper-case logical operators and their
// expr-lang spelling, of the same length so that positions do not move.
var prodigyWords = map[string]string{"AND": "and", "OR": "or", "NOT": "not"}

// exprSource translates a condition (a `when`, `repeat.until` or
// `map.filter`) written in Prodigy's syntax into expr-lang's:
//
//   - AND, OR, NOT are and, or, not; a lone = is ==;
//   - is_null(x), is_not_null(x), contains(s, sub), starts_with(s, p),
//     ends_with(s, s), matches(s, re) and length(x) are functions
//     (expr-lang's own infix contains and matches stay as they are);
//   - path.exists is true when the path holds a value, and a member of a
//     missing value is nil (a.b is a?.b);
//   - ${path} and ${path:-default} are variable references, ${EXPR} is
//     the expression EXPR, and inside a quoted string a placeholder is the
//     variable's value as text, as in the shell ("" when undefined);
//   - a backslash that starts no escape in a string literal is a
//     backslash ('\.rs$' is the regular expression \.rs$).
//
// The work is done on tokens, so a string that holds AND or = is left as
// written.
func exprSource(src string) string {
	return translate(src).out.String()
}

// translate is exprSource with the position of each byte of the result.
func translate(src string) *translation {
	t := &translation{from: make([]int, 0, len(src)+8)}
	t.tokens(src, 0, len(src), false)
	return t
}

// tokens translates src[at:end]; inPlaceholder is set inside ${EXPR}.
func (t *translation) tokens(src string, at, end int, inPlaceholder bool) {
	prev := "" // the previous token, "" at the start: tells a call from an infix operator
	for i := at; i < end; {
		c := src[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			t.copy(src, i, i+1)
			i++
			continue
		case c == '"' || c == '\'':
			n := min(quotedLen(src[i:end]), end-i)
			t.stringLiteral(src, i, i+n)
			i += n
			prev = "string"
			continue
		case c == '$' && i+1 < end && src[i+1] == '{':
			i = t.placeholder(src, i, end)
			prev = "name"
			continue
		case isNameStart(c):
			i, prev = t.name(src, i, end, prev, inPlaceholder)
			continue
		case c >= '0' && c <= '9':
			j := i
			for j < end && (isNameByte(src[j]) || src[j] == '.' && j+1 < end && src[j+1] >= '0' && src[j+1] <= '9') {
				j++
			}
			t.copy(src, i, j)
			i, prev = j, "name"
			continue
		case c == '.' && (prev == "name" || prev == "close") && i+1 < end && isNameStart(src[i+1]):
			// A member of a missing value is nil, not an error, as a
			// missing field is in Prodigy's filters; inside ${EXPR} a
			// member with a hyphen, such as the step id in
			// steps.my-step.output, is a lookup by name.
			j := wordEnd(src, i+1, end, inPlaceholder)
			if word := src[i+1 : j]; strings.Contains(word, "-") {
				t.emit("?.["+strconv.Quote(word)+"]", i)
				i, prev = j, "close"
				continue
			}
			t.emit("?.", i)
			i, prev = i+1, "dot"
			continue
		case c == '=':
			n := operatorLen(src[i:end])
			switch {
			case n == 1 && prev != "let-name":
				t.emit("==", i)
			default:
				t.copy(src, i, i+n)
			}
			i += n
			prev = "op"
			continue
		case strings.IndexByte("!<>", c) >= 0:
			n := operatorLen(src[i:end])
			t.copy(src, i, i+n)
			i += n
			prev = "op"
			continue
		}
		t.copy(src, i, i+1)
		switch c {
		case ')', ']', '}':
			prev = "close"
		case '.':
			prev = "dot"
		default:
			prev = "op"
		}
		i++
	}
}

// operatorLen is the length of the comparison operator at the start of s.
func operatorLen(s string) int {
	if len(s) > 1 && s[1] == '=' {
		return 2
	}
	return 1
}

func isNameStart(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

func isNameByte(c byte) bool { return isNameStart(c) || c >= '0' && c <= '9' }

// name translates the word at src[i:] (and, for path.exists, the path it
// ends) and returns where it ends and the kind of token it was.
func (t *translation) name(src string, i, end int, prev string, inPlaceholder bool) (int, string) {
	j := wordEnd(src, i, end, inPlaceholder && prev != "dot")
	word := src[i:j]
	member := prev == "dot"
	if member {
		return t.copyWord(src, i, j, word)
	}
	if repl, ok := prodigyWords[word]; ok {
		t.emit(repl, i)
		return j, "op"
	}
	if isCall(src, j, end) && prev != "name" && prev != "close" && prev != "string" {
		for _, f := range prodigyFunctions {
			if word == f {
				t.emit(prodigyPrefix, i)
				t.copy(src, i, j)
				return j, "name"
			}
		}
	}
	if pathEnd, ok := existsPath(src, i, end); ok {
		t.emit("(", i)
		t.pathRef(src, i, pathEnd-len(".exists"), true)
		t.emit(" != nil)", pathEnd-len("exists"))
		return pathEnd, "close"
	}
	if word == "let" {
		t.copy(src, i, j)
		return j, "let"
	}
	if prev == "let" {
		t.copy(src, i, j)
		return j, "let-name"
	}
	return t.copyWord(src, i, j, word)
}

// copyWord copies a word; inside ${EXPR} a word with a hyphen (a step id
// such as test-step) becomes a lookup by name.
func (t *translation) copyWord(src string, i, j int, word string) (int, string) {
	if strings.Contains(word, "-") {
		t.emit("$env["+strconv.Quote(word)+"]", i)
	} else {
		t.copy(src, i, j)
	}
	switch word {
	case "and", "or", "not", "in", "matches", "contains", "startsWith", "endsWith":
		return j, "op"
	}
	return j, "name"
}

// wordEnd returns where the word at src[i:] ends; with hyphens, a hyphen
// between two letters or digits is part of it (a step id).
func wordEnd(src string, i, end int, hyphens bool) int {
	for i < end && (isNameByte(src[i]) || hyphens && src[i] == '-' && i+1 < end && isNameByte(src[i+1])) {
		i++
	}
	return i
}

// isCall reports whether an opening parenthesis follows src[:j], after
// blanks.
func isCall(src string, j, end int) bool {
	for j < end && (src[j] == ' ' || src[j] == '\t') {
		j++
	}
	return j < end && src[j] == '('
}

// existsPath reports whether src[i:] is a dotted path ending in .exists
// (a.b.exists), and where it ends.
func existsPath(src string, i, end int) (int, bool) {
	j := i
	for {
		for j < end && isNameByte(src[j]) {
			j++
		}
		if j >= end || src[j] != '.' {
			return 0, false
		}
		k := j + 1
		for k < end && isNameByte(src[k]) {
			k++
		}
		if k == j+1 {
			return 0, false
		}
		if src[j+1:k] == "exists" && (k == end || !isNameByte(src[k]) && src[k] != '.' && src[k] != '(') {
			return k, true
		}
		j = k
	}
}

// pathRef writes the dotted path src[i:end]; with safe, each member access
// is ?. so that a missing part is nil rather than an error.
func (t *translation) pathRef(src string, i, end int, safe bool) {
	for k := i; k < end; k++ {
		if src[k] == '.' && safe {
			t.emit("?.", k)
			continue
		}
		t.copy(src, k, k+1)
	}
}

// placeholderPath is a ${path} or ${path:-default} inside an expression.
var placeholderPath = regexp.MustCompile(`^\$\{([A-Za-z_][A-Za-z0-9_]*(?:\[[0-9]+\]|\.[A-Za-z_][A-Za-z0-9_-]*)*)(?::-([^}]*))?\}`)

// pathSegment is one ".name" segment of a path.
var pathSegment = regexp.MustCompile(`\.([A-Za-z_][A-Za-z0-9_-]*)`)

// placeholder translates the ${...} at src[i:] and returns where it ends:
// a path is a variable reference, anything else an expression in
// parentheses. An unclosed ${ is left to expr-lang to report.
func (t *translation) placeholder(src string, i, end int) int {
	if m := placeholderPath.FindStringSubmatch(src[i:end]); m != nil {
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
// reference: segments with a hyphen become ["name"] lookups, a default
// a ?? fallback, and path.exists a test that the path holds a value.
func exprRef(m []string) string {
	full, def := m[1], strings.Contains(m[0], ":-")
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
	return pathSegment.ReplaceAllStringFunc(path, func(seg string) string {
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
		m := placeholderPath.FindStringSubmatch(body[k:])
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
