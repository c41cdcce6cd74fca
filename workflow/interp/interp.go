// Package interp expands ${...} placeholders in command templates, escaping
// each value for the shell quoting context it lands in.
//
// Parse scans the template the way sh (dash, and bash where they differ)
// would and records, for every placeholder, whether it stands unquoted,
// inside double or single quotes, in a here-document body, in a comment, and
// so on. Expand in Shell mode then escapes each value so that it reaches the
// command as exactly one intact string and is never run. Where no safe
// escaping exists (inside $'...' or a shell ${...} expansion; arithmetic
// takes base-10 integers only) or the scanner cannot be sure of the context
// (for example after "case" inside $(...)), Expand returns an error instead
// of guessing.
//
// The ${...} forms are recognized everywhere. The bare $NAME form is only
// substituted in Shell mode where sh itself would expand it, so the $NF in
// awk '{print $NF}' stays as written even when NF is defined.
//
// The guarantee is about quoting only: a command that itself evaluates its
// arguments (eval, sh -c, bash's [[ x -eq y ]] or let) can still run code
// found in a value.
package interp

import (
	"errors"
	"fmt"
	"strings"
)

// Lookup resolves a dotted path such as "item.tags[0]" or "REGION"; ok=false
// when undefined.
type Lookup func(path string) (value any, ok bool)

// Mode selects how values are written into the expanded text.
type Mode int

const (
	// Shell escapes every value for the sh -c quoting context it stands in.
	Shell Mode = iota
	// Plain inserts values as text without escaping (env values, paths).
	Plain
)

// Namespaces are the first path segments that name runner variables. An
// undefined path in one of them is an error rather than shell text.
var Namespaces = []string{"item", "map", "setup", "steps", "error", "shell"}

// UndefinedError reports a placeholder in a runner namespace whose path is
// not defined.
type UndefinedError struct{ Path string }

func (e *UndefinedError) Error() string { return fmt.Sprintf("undefined variable %q", e.Path) }

// Template is a parsed command template. It is immutable and safe for
// concurrent use.
type Template struct {
	src      string
	segs     []segment
	heredocs []*heredoc
}

// segment is either literal text or a placeholder.
type segment struct {
	lit string
	ph  *placeholder
}

// placeholder is one ${...} or $NAME occurrence.
type placeholder struct {
	src    string // source text, written back when the shell should expand it
	off    int    // byte offset in the template
	path   string
	def    string // text after ":-"
	hasDef bool
	filter string // "", "raw" or "json"
	inert  bool   // $NAME where sh would not expand it (single quotes, comments...)
	ctx    context
}

// heredoc is a here-document; its body is segs[start:end].
type heredoc struct {
	delim  string
	strip  bool // <<- : leading tabs are removed from body lines
	quoted bool // delimiter was quoted: the body is literal
	inCmd  bool // inside $(...), where bash also ends the body at "EOF...)"
	off    int  // offset of the << operator
	start  int
	end    int
}

// where describes a byte offset of src for error messages.
func where(src string, off int) string {
	line := 1 + strings.Count(src[:off], "\n")
	col := off - strings.LastIndexByte(src[:off], '\n')
	return fmt.Sprintf("offset %d (line %d, column %d)", off, line, col)
}

// String returns the template source.
func (t *Template) String() string { return t.src }

// Refs returns the paths referenced by placeholders, in order, including
// bare $NAME forms that Shell mode leaves alone.
func (t *Template) Refs() []string {
	var refs []string
	for _, s := range t.segs {
		if s.ph != nil {
			refs = append(refs, s.ph.path)
		}
	}
	return refs
}

// Expand substitutes the placeholders whose paths lookup defines. Undefined
// plain names are left for the shell; undefined paths in a namespace are an
// *UndefinedError unless the placeholder has a default.
func (t *Template) Expand(lookup Lookup, mode Mode) (string, error) {
	var b strings.Builder
	starts := make([]int, len(t.segs)+1)
	for i, s := range t.segs {
		starts[i] = b.Len()
		if s.ph == nil {
			b.WriteString(s.lit)
			continue
		}
		v, err := s.ph.expand(lookup, mode)
		var undef *UndefinedError
		if errors.As(err, &undef) {
			return "", err
		}
		if err != nil {
			return "", fmt.Errorf("placeholder %s at %s: %w", s.ph.src, where(t.src, s.ph.off), err)
		}
		b.WriteString(v)
	}
	starts[len(t.segs)] = b.Len()
	out := b.String()
	if mode == Shell {
		for _, h := range t.heredocs {
			if t.hasPlaceholder(h.start, h.end) {
				if err := h.check(out[starts[h.start]:starts[h.end]]); err != nil {
					return "", fmt.Errorf("heredoc at %s: %w", where(t.src, h.off), err)
				}
			}
		}
	}
	return out, nil
}

func (t *Template) hasPlaceholder(from, to int) bool {
	for _, s := range t.segs[from:to] {
		if s.ph != nil {
			return true
		}
	}
	return false
}

// expand returns the text that replaces p.
func (p *placeholder) expand(lookup Lookup, mode Mode) (string, error) {
	if p.inert && mode == Shell {
		return p.src, nil
	}
	var (
		v  any
		ok bool
	)
	if lookup != nil {
		v, ok = lookup(p.path)
	}
	var text string
	switch {
	case ok:
		var err error
		if text, err = toText(v, p.filter == "json"); err != nil {
			return "", err
		}
		if text == "" && p.hasDef {
			text = p.def
		}
	case !namespaced(p.path):
		return p.src, nil
	case p.hasDef:
		text = p.def
	default:
		return "", &UndefinedError{Path: p.path}
	}
	if mode == Plain {
		return text, nil
	}
	return p.ctx.escape(text, p.filter == "raw")
}

// namespaced reports whether path starts with one of Namespaces.
func namespaced(path string) bool {
	first := path
	if i := strings.IndexAny(path, ".["); i >= 0 {
		first = path[:i]
	}
	for _, ns := range Namespaces {
		if first == ns {
			return true
		}
	}
	return false
}
