package dlq

import (
	"cmp"
	"regexp"
	"slices"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"
)

// MaxSignature is the length of a signature in runes.
const MaxSignature = 200

// maxSignatureInput is how much of the first line Signature reads, in bytes.
const maxSignatureInput = 1024

// The rewrites of Signature, in order. Later ones never see what earlier
// ones removed, and no replacement contains a digit or a hex run.
var (
	reANSI = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\x1b\[[0-9;?]*[A-Za-z]`) })
	reURL  = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`\b[A-Za-z][A-Za-z0-9+.-]*://[^\s"'<>]*[^\s"'<>.,:;)\]}]`)
	})
	reUUID = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`(?i)\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b`)
	})
	reDouble = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`"(?:[^"\\]|\\.)*"|“[^”]*”`) })
	// A single quote opens a string only after a space or punctuation, so
	// the apostrophe in "can't" is left alone.
	reSingle = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(^|[\s(\[{=:,])(?:'[^'\n]*'|‘[^’]*’)`) })
	rePath   = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`[\w.~@%+=-]*/[\w.~@%+=/-]*`) })
	reHex    = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\b(?:0[xX][0-9a-fA-F]+|[0-9a-fA-F]{8,})\b`) })
	reNumber = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\d+(?:\.\d+)*`) })
)

// minOwn is the length in runes of the shortest item string that
// Signature replaces: shorter ones are too likely to be ordinary words.
const minOwn = 3

// Signature reduces an error message to what failures of "the same" error
// have in common, to group them: it keeps the first non-blank line, drops
// terminal colour codes and replaces
//
//	the failed item's own strings (own)      ITEM
//	URLs (scheme://...)                      URL
//	UUIDs                                    UUID
//	"quoted" and 'quoted' strings            "…" and '…'
//	paths: words with a slash (/a/b, a/b.c)  PATH
//	hex runs of 8+ digits, 0x1f              X
//	numbers (42, 1.5, 10.0.0.1)              N
//
// then collapses white space and keeps at most MaxSignature runes. So
// "open /tmp/a/b.json: no such file" and "open /var/x.json: no such file"
// both give "open PATH: no such file", and with own from ItemStrings,
// "cannot decode huge.tiff: bad header" and "cannot decode corrupt.jpg:
// bad header" both give "cannot decode ITEM: bad header". An own string is
// replaced where it stands as a whole, not inside a longer word, and only
// if it has at least three runes and a letter.
func Signature(message string, own ...string) string {
	line := ""
	for l := range strings.Lines(message) {
		if strings.TrimSpace(l) != "" {
			line = l
			break
		}
	}
	// What survives is at most MaxSignature runes: the regexps need not see
	// more than the start of a long line.
	s := reANSI().ReplaceAllString(head(line, maxSignatureInput), "")
	s = replaceOwn(s, own)
	s = reURL().ReplaceAllString(s, "URL")
	s = reUUID().ReplaceAllString(s, "UUID")
	s = reDouble().ReplaceAllString(s, `"…"`)
	s = reSingle().ReplaceAllString(s, `$1'…'`)
	s = rePath().ReplaceAllStringFunc(s, func(m string) string {
		if strings.Trim(m, "/") == "" {
			return m // a lone "/" or "//" is not a path
		}
		return "PATH"
	})
	s = reHex().ReplaceAllStringFunc(s, func(m string) string {
		if strings.Trim(m, "0123456789") == "" {
			return m // all digits: a number, below
		}
		return "X"
	})
	s = reNumber().ReplaceAllString(s, "N")
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > MaxSignature {
		s = string(r[:MaxSignature])
	}
	return s
}

// ItemStrings returns the strings of a failed item that its error messages
// are likely to quote, for Signature: the item id, the item if it is a
// string, and the string fields of an object item; item is a decoded JSON
// value.
func ItemStrings(itemID string, item any) []string {
	own := []string{itemID}
	switch v := item.(type) {
	case string:
		own = append(own, v)
	case map[string]any:
		for _, f := range v {
			if s, ok := f.(string); ok {
				own = append(own, s)
			}
		}
	}
	return own
}

// replaceOwn replaces the own strings that s contains by ITEM, longer ones
// first, each where it is not part of a longer word. Strings shorter than
// minOwn or without a letter (numbers, which Signature replaces anyway)
// are left alone.
func replaceOwn(s string, own []string) string {
	var found []string
	for _, o := range own {
		if utf8.RuneCountInString(o) >= minOwn && strings.ContainsFunc(o, unicode.IsLetter) && strings.Contains(s, o) {
			found = append(found, o)
		}
	}
	if len(found) == 0 {
		return s
	}
	slices.SortFunc(found, func(a, b string) int { return cmp.Compare(len(b), len(a)) })
	alts := make([]string, len(found))
	for i, o := range found {
		alts[i] = regexp.QuoteMeta(o)
		if isWordByte(o[0]) {
			alts[i] = `\b` + alts[i]
		}
		if isWordByte(o[len(o)-1]) {
			alts[i] += `\b`
		}
	}
	return regexp.MustCompile(strings.Join(alts, "|")).ReplaceAllLiteralString(s, "ITEM")
}

// isWordByte reports an ASCII letter, digit or underscore: what \b sees.
func isWordByte(c byte) bool {
	return c == '_' || '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
}
