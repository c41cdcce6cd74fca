package workflow

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"
	"sync"
	"unicode/utf8"

	"gopkg.in/yaml.v3"
)

// maxBisectSize bounds the files whose YAML errors are bisected: each
// step parses the file up to the middle, some 25 parses in all, which
// takes seconds for a file of the largest size runner reads (workflow
// files are a few kilobytes).
const maxBisectSize = 512 << 10

// yamlProblemPos finds where a YAML syntax error is. yaml.v3 reports an
// error at the start of the construct it was reading ("while parsing a
// block collection" starts at the list's first item), which can be a
// hundred lines above the line that is wrong, and drops the column. The
// line that is wrong is the last line of the shortest prefix of the file
// that fails with the same error, and its column the last character of
// the shortest such prefix of that line: both are found by bisection,
// starting from the reported line, as the construct cannot start after
// its problem. failure is the error of the whole file.
func yamlProblemPos(src []byte, reported int, failure string) (Pos, bool) {
	if len(src) > maxBisectSize {
		return Pos{}, false
	}
	lines := bytes.SplitAfter(src, []byte("\n"))
	same := func(n int) bool { return yamlFailure(src[:n]) == failure }
	starts := make([]int, len(lines)+1) // starts[k]: offset of line k+1; starts[len] = len(src)
	for k, l := range lines {
		starts[k+1] = starts[k] + len(l)
	}
	lo, hi := max(reported-1, 1), len(lines) // line numbers, from 1
	if lo > hi || !same(len(src)) {
		return Pos{}, false
	}
	for lo < hi {
		mid := (lo + hi) / 2
		if same(starts[mid]) {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	line := lines[lo-1]
	from, to := starts[lo-1], starts[lo] // the shortest prefix ends in (from, to]
	for from+1 < to {
		mid := (from + to) / 2
		if same(mid) {
			to = mid
		} else {
			from = mid
		}
	}
	end := to - 1 - starts[lo-1]
	if bytes.Contains([]byte(failure), []byte("did not find expected")) {
		// The parser fails at the end of the token it did not expect
		// (the : of a key): show where the token starts.
		for end > 0 && line[end-1] != ' ' && line[end-1] != '\t' {
			end--
		}
	}
	col := utf8.RuneCount(line[:end]) + 1
	return Pos{Line: lo, Col: min(col, max(utf8.RuneCount(bytes.TrimRight(line, "\r\n")), 1))}, true
}

// indentationMessages are yaml.v3's messages for a line indented too far
// or not far enough for the lines around it.
var indentationMessages = []string{
	"did not find expected '-' indicator", "did not find expected key",
	"could not find expected ':'", "block sequence entries are not allowed",
}

// leadingKey is a line's start up to the colon of its first key.
var leadingKey = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^ *(- +)?[A-Za-z0-9_.-]+ *$`) })

// indentationProblem reports whether a YAML syntax error at at is most
// likely a bad indentation: one of indentationMessages, or "mapping values
// are not allowed" at the colon of a line's first key (a key indented
// under a scalar), not at a ": " inside a value that needs quotes.
func indentationProblem(src []byte, at Pos, msg string) bool {
	for _, m := range indentationMessages {
		if strings.Contains(msg, m) {
			return true
		}
	}
	if !strings.Contains(msg, "mapping values are not allowed") {
		return false
	}
	start := offsetOf(src, at.Line, 1)
	if start < 0 {
		return false
	}
	line := []rune(string(src[start:]))
	if at.Col-1 > len(line) {
		return false
	}
	return leadingKey().MatchString(string(line[:at.Col-1]))
}

// quoteOpening returns the position of the first quote on a line (where
// yaml.v3 reports a quoted string that never closes), or the line's start.
func quoteOpening(src []byte, line int) Pos {
	at := offsetOf(src, line, 1)
	if at < 0 {
		return Pos{Line: max(line, 1), Col: 1}
	}
	text := src[at:]
	if nl := bytes.IndexByte(text, '\n'); nl >= 0 {
		text = text[:nl]
	}
	q := bytes.IndexAny(text, `"'`)
	if q < 0 {
		return Pos{Line: line, Col: 1}
	}
	return Pos{Line: line, Col: utf8.RuneCount(text[:q]) + 1}
}

// yamlFailure returns the error of decoding every document of src, or ""
// when it decodes (yaml.v3's panics count as errors).
func yamlFailure(src []byte) (failure string) {
	defer func() {
		if r := recover(); r != nil {
			failure = fmt.Sprint(r)
		}
	}()
	dec := yaml.NewDecoder(bytes.NewReader(src))
	for {
		var n yaml.Node
		err := dec.Decode(&n)
		if errors.Is(err, io.EOF) {
			return ""
		}
		if err != nil {
			return err.Error()
		}
	}
}
