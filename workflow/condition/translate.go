package condition

import (
	"slices"
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

// translate translates a condition (a `when`, `repeat.until` or
// `map.filter`) written in Prodigy's syntax into expr-lang's:
//
//   - AND, OR, NOT are and, or, not; a lone = is ==; a =~ 're' is a
//     matches 're' (a regular expression), a !~ 're' a not matches 're';
//   - is_null(x), is_not_null(x), contains(s, sub), starts_with(s, p),
//     ends_with(s, suffix), matches(s, re) and length(x) are functions
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
// written, and the origin of each byte of the result is kept.
func translate(src string) *translation {
	t := &translation{from: make([]int, 0, len(src)+8)}
	t.tokens(src, 0, len(src), false)
	return t
}

// lastToken is the kind of the token before the current one: it tells a
// call contains(a, b) from the infix a contains b, a member from a name,
// and let's = from a comparison.
type lastToken int

const (
	afterOperator lastToken = iota // an operator, an opening bracket, or the start
	afterOperand                   // a name, number, string or closing bracket
	afterDot
	afterLet     // let, whose name comes next
	afterLetName // let NAME, whose = assigns
)

// tokens translates src[at:end]; inPlaceholder is set inside ${EXPR}.
func (t *translation) tokens(src string, at, end int, inPlaceholder bool) {
	prev := afterOperator
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
			prev = afterOperand
			continue
		case c == '$' && i+1 < end && src[i+1] == '{':
			i = t.placeholder(src, i, end)
			prev = afterOperand
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
			i, prev = j, afterOperand
			continue
		case c == '.' && prev == afterOperand && i+1 < end && isNameStart(src[i+1]):
			// A member of a missing value is nil, not an error, as a
			// missing field is in Prodigy's filters; inside ${EXPR} a
			// member with a hyphen, such as the step id in
			// steps.my-step.output, is a lookup by name.
			j := wordEnd(src, i+1, end, inPlaceholder)
			if word := src[i+1 : j]; strings.Contains(word, "-") {
				t.emit("?.["+strconv.Quote(word)+"]", i)
				i, prev = j, afterOperand
				continue
			}
			t.emit("?.", i)
			i, prev = i+1, afterDot
			continue
		case (c == '=' || c == '!') && i+1 < end && src[i+1] == '~':
			// Perl's regular-expression match, a =~ 're' (!~: no match),
			// is expr-lang's a matches 're' (a not matches 're').
			t.emit(map[byte]string{'=': " matches ", '!': " not matches "}[c], i)
			i += 2
			prev = afterOperator
			continue
		case c == '=':
			n := operatorLen(src[i:end])
			switch {
			case n == 1 && prev != afterLetName:
				t.emit("==", i)
			default:
				t.copy(src, i, i+n)
			}
			i += n
			prev = afterOperator
			continue
		case strings.IndexByte("!<>", c) >= 0:
			n := operatorLen(src[i:end])
			t.copy(src, i, i+n)
			i += n
			prev = afterOperator
			continue
		}
		t.copy(src, i, i+1)
		switch c {
		case ')', ']', '}':
			prev = afterOperand
		case '.':
			prev = afterDot
		default:
			prev = afterOperator
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
func (t *translation) name(src string, i, end int, prev lastToken, inPlaceholder bool) (int, lastToken) {
	j := wordEnd(src, i, end, inPlaceholder && prev != afterDot)
	word := src[i:j]
	switch {
	case prev == afterDot:
		return t.copyWord(src, i, j, word)
	case prodigyWords[word] != "":
		t.emit(prodigyWords[word], i)
		return j, afterOperator
	case prev != afterOperand && isCall(src, j, end) && slices.Contains(prodigyFunctions, word):
		t.emit(prodigyPrefix, i)
		t.copy(src, i, j)
		return j, afterOperand
	case word == "let":
		t.copy(src, i, j)
		return j, afterLet
	case prev == afterLet:
		t.copy(src, i, j)
		return j, afterLetName
	}
	if pathEnd, ok := existsPath(src, i, end); ok {
		t.emit("(", i)
		t.safePath(src, i, pathEnd-len(".exists"))
		t.emit(" != nil)", pathEnd-len("exists"))
		return pathEnd, afterOperand
	}
	return t.copyWord(src, i, j, word)
}

// copyWord copies a word; inside ${EXPR} a word with a hyphen (a step id
// such as test-step) becomes a lookup by name.
func (t *translation) copyWord(src string, i, j int, word string) (int, lastToken) {
	if strings.Contains(word, "-") {
		t.emit("$env["+strconv.Quote(word)+"]", i)
	} else {
		t.copy(src, i, j)
	}
	switch word {
	case "and", "or", "not", "in", "matches", "contains", "startsWith", "endsWith":
		return j, afterOperator
	}
	return j, afterOperand
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

// safePath writes the dotted path src[i:end] with each member access ?.,
// so that a missing part is nil rather than an error.
func (t *translation) safePath(src string, i, end int) {
	for k := i; k < end; k++ {
		if src[k] == '.' {
			t.emit("?.", k)
			continue
		}
		t.copy(src, k, k+1)
	}
}
