package interp

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// ctxKind is the quoting context a placeholder stands in.
type ctxKind uint8

const (
	ctxUnquoted   ctxKind = iota // a word, also inside $(...) and `...`
	ctxDouble                    // "..."
	ctxSingle                    // '...'
	ctxHere                      // body of <<WORD
	ctxHereQuoted                // body of <<'WORD'
	ctxComment                   // # ...
	ctxArith                     // $((...)) or ((...)): integers only
	ctxANSI                      // $'...': refused
	ctxParam                     // a shell ${...}: refused
	ctxUnknown                   // the scanner lost track: refused
)

// context is where a placeholder stands, as recorded by Parse.
type context struct {
	kind      ctxKind
	backquote bool   // inside `...`: one more level of \, ` and $ escaping
	delim     string // ctxHere: the heredoc delimiter
	strip     bool   // ctxHere: <<- strips leading tabs
	head      head   // ctxHere: what precedes the placeholder on its line
	why       string // ctxUnknown: what made the context uncertain
}

// head is what precedes a placeholder on its heredoc body line.
type head uint8

const (
	headUnknown head = iota // text that may start the delimiter, or another value
	headNone                // nothing (or tabs that <<- strips): the value starts the line
	headSafe                // text that no delimiter line starts with
)

var (
	doubleQuoter = strings.NewReplacer(`\`, `\\`, `$`, `\$`, "`", "\\`", `"`, `\"`)
	hereQuoter   = strings.NewReplacer(`\`, `\\`, `$`, `\$`, "`", "\\`")
	backQuoter   = strings.NewReplacer(`\`, `\\`, "`", "\\`", `$`, `\$`)
)

// escape returns v written so that sh reads it back unchanged in context c.
// With raw, v is inserted as is.
func (c context) escape(v string, raw bool) (string, error) {
	if strings.IndexByte(v, 0) >= 0 {
		return "", errors.New("value contains a NUL byte, which cannot be passed to a shell")
	}
	if raw {
		return v, nil
	}
	var out string
	switch c.kind {
	case ctxUnquoted:
		out = "'" + strings.ReplaceAll(v, "'", `'\''`) + "'"
	case ctxDouble:
		out = doubleQuoter.Replace(v)
	case ctxSingle:
		out = strings.ReplaceAll(v, "'", `'\''`)
	case ctxHere:
		out = c.hereBody(v)
	case ctxHereQuoted:
		out = v // Expand checks the body for the delimiter line
	case ctxComment:
		out = strings.ReplaceAll(v, "\n", " ") // a newline would end the comment
	case ctxArith:
		return arithValue(v)
	case ctxANSI:
		return "", errors.New("placeholder inside $'...' is not supported")
	case ctxParam:
		return "", errors.New("placeholder inside a shell ${...} expansion is not supported (use ${path:-default})")
	default:
		return "", fmt.Errorf("cannot tell the shell quoting context: %s", c.why)
	}
	if c.backquote {
		out = backQuoter.Replace(out)
	}
	return out, nil
}

// hereBody escapes v for the body of an unquoted heredoc. A line of v that
// could end the body (see heredoc.ends), trip dash's delimiter check (see
// heredoc.dashDrops) or lose its leading tabs under <<- is prefixed with
// ${0+}: that expands to nothing, but the shell compares the raw line with
// the delimiter before expanding it. Expand's check backs this up.
func (c context) hereBody(v string) string {
	lines := strings.Split(v, "\n")
	for i, l := range lines {
		var guard bool
		switch {
		case i == 0 && c.head == headSafe:
		case i == 0 && c.head == headUnknown, i == len(lines)-1 && l == "":
			guard = true // the line's start is text we do not see here
		default:
			guard = c.strip && strings.HasPrefix(l, "\t") || c.delim == "" || l != "" && l[0] == c.delim[0]
		}
		lines[i] = hereQuoter.Replace(l)
		if guard {
			lines[i] = "${0+}" + lines[i]
		}
	}
	return strings.Join(lines, "\n")
}

// arithValue admits only a base-10 integer into arithmetic, where bash would
// evaluate anything else (including a[$(cmd)]) as an expression.
func arithValue(v string) (string, error) {
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return "", errors.New("placeholder inside arithmetic needs a base-10 integer value")
	}
	if n < 0 {
		return "(" + strconv.FormatInt(n, 10) + ")", nil
	}
	return strconv.FormatInt(n, 10), nil
}

// ShellWord writes w so that sh (and executor's splitWords) reads it back
// as one word: as it is when no character in it is special to the shell,
// else single-quoted.
func ShellWord(w string) string {
	if w != "" && !strings.ContainsFunc(w, func(r rune) bool { return strings.ContainsRune(" \t\n'\"\\$`*?[]#~=%|&;<>(){}!", r) }) {
		return w
	}
	return "'" + strings.ReplaceAll(w, "'", `'\''`) + "'"
}
