package dlq

import (
	"regexp"
	"strings"
)

// MaxSignature is the length of a signature in runes.
const MaxSignature = 200

// maxSignatureInput is how much of the first line Signature reads, in bytes.
const maxSignatureInput = 1024

// The rewrites of Signature, in order. Later ones never see what earlier
// ones removed, and no replacement contains a digit or a hex run.
var (
	reANSI   = regexp.MustCompile(`\x1b\[[0-9;?]*[A-Za-z]`)
	reURL    = regexp.MustCompile(`\b[A-Za-z][A-Za-z0-9+.-]*://[^\s"'<>]*[^\s"'<>.,:;)\]}]`)
	reUUID   = regexp.MustCompile(`(?i)\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b`)
	reDouble = regexp.MustCompile(`"(?:[^"\\]|\\.)*"|“[^”]*”`)
	// A single quote opens a string only after a space or punctuation, so
	// the apostrophe in "can't" is left alone.
	reSingle = regexp.MustCompile(`(^|[\s(\[{=:,])(?:'[^'\n]*'|‘[^’]*’)`)
	rePath   = regexp.MustCompile(`[\w.~@%+=-]*/[\w.~@%+=/-]*`)
	reHex    = regexp.MustCompile(`\b(?:0[xX][0-9a-fA-F]+|[0-9a-fA-F]{8,})\b`)
	reNumber = regexp.MustCompile(`\d+(?:\.\d+)*`)
)

// Signature reduces an error message to what failures of "the same" error
// have in common, to group them: it keeps the first non-blank line, drops
// terminal colour codes and replaces
//
//	URLs (scheme://...)                      URL
//	UUIDs                                    UUID
//	"quoted" and 'quoted' strings            "…" and '…'
//	paths: words with a slash (/a/b, a/b.c)  PATH
//	hex runs of 8+ digits, 0x1f              X
//	numbers (42, 1.5, 10.0.0.1)              N
//
// then collapses white space and keeps at most MaxSignature runes. So
// "open /tmp/a/b.json: no such file" and "open /var/x.json: no such file"
// both give "open PATH: no such file".
func Signature(message string) string {
	line := ""
	for l := range strings.Lines(message) {
		if strings.TrimSpace(l) != "" {
			line = l
			break
		}
	}
	// What survives is at most MaxSignature runes: the regexps need not see
	// more than the start of a long line.
	s := reANSI.ReplaceAllString(head(line, maxSignatureInput), "")
	s = reURL.ReplaceAllString(s, "URL")
	s = reUUID.ReplaceAllString(s, "UUID")
	s = reDouble.ReplaceAllString(s, `"…"`)
	s = reSingle.ReplaceAllString(s, `$1'…'`)
	s = rePath.ReplaceAllStringFunc(s, func(m string) string {
		if strings.Trim(m, "/") == "" {
			return m // a lone "/" or "//" is not a path
		}
		return "PATH"
	})
	s = reHex.ReplaceAllStringFunc(s, func(m string) string {
		if strings.Trim(m, "0123456789") == "" {
			return m // all digits: a number, below
		}
		return "X"
	})
	s = reNumber.ReplaceAllString(s, "N")
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > MaxSignature {
		s = string(r[:MaxSignature])
	}
	return s
}
