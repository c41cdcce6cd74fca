package interp

import (
	"regexp"
	"sync"
)

// Ref is a placeholder as written, and the path it reads.
type Ref struct {
	Src  string // ${LIST}, $LIST
	Path string // LIST
}

// forList matches the text of a command up to the words of a for loop:
// "for NAME in" and the words written so far, at the start of a command.
var forList = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?:^|[;&|({\n]|\bdo|\bthen|\belse)[ \t]*for[ \t]+[A-Za-z_][A-Za-z0-9_]*[ \t]+in[ \t][^;\n&|]*$`)
})

// ForWords returns the placeholders that stand unquoted among the words
// of a for loop (for x in ${LIST}; do ...), but those with |raw: in Shell
// mode runner inserts each value as one word, escaped, so the loop runs
// once for it, whatever spaces the value holds.
func (t *Template) ForWords() []Ref {
	var out []Ref
	for _, s := range t.segs {
		p := s.ph
		if p == nil || p.inert || p.filter == "raw" || p.filter == asWritten || p.ctx.kind != ctxUnquoted {
			continue
		}
		if forList().MatchString(t.src[:p.off]) {
			out = append(out, Ref{Src: p.src, Path: p.path})
		}
	}
	return out
}
