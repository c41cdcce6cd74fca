package interp

import (
	"crypto/rand"
	"errors"
	"fmt"
	"slices"
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
var Namespaces = []string{"item", "map", "setup", "steps", "error", "shell", "claude", "validation", "merge", "worktree", "workflow", "step", "last"}

// computedKinds are the prefixes of Prodigy's computed variables, whose
// value is worked out when the placeholder is read: ${file:PATH},
// ${cmd:COMMAND}, ${json:PATH:from:VAR}, ${date:FORMAT}. Such a
// placeholder's path is the whole text between its braces.
var computedKinds = []string{"file", "cmd", "json", "date"}

// Computed splits the path of a computed placeholder into its kind and
// argument; ok=false for any other path.
func Computed(path string) (kind, arg string, ok bool) {
	kind, arg, ok = strings.Cut(path, ":")
	if !ok || !slices.Contains(computedKinds, kind) || shellModifier(arg) {
		return "", "", false
	}
	return kind, arg, true
}

// shellModifier reports whether arg, after "NAME:", is the shell's own
// (${file:-x}, ${file:=x}, ${file:?x}, ${file:+x}, bash's substring
// ${file:1} or ${file:0:3}) rather than a computed variable's argument.
func shellModifier(arg string) bool {
	if arg == "" || strings.IndexByte("-=?+ ", arg[0]) >= 0 {
		return true
	}
	return strings.Trim(arg, "0123456789:") == ""
}

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
	def    []segment // the default after ":-": text and nested placeholders; nil without one
	shell  string    // what the shell reads when runner leaves p to it, when not src: ${path:-text} for Prodigy's ${path|default:text}
	filter string    // "", "raw", "json" or asWritten
	inert  bool      // $NAME where sh would not expand it (single quotes, comments...)
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

// SyntaxError is a malformed placeholder, at a byte offset of the
// template's text: the file's parser turns it into a file position.
type SyntaxError struct {
	Offset int
	Msg    string
	src    string
}

func (e *SyntaxError) Error() string { return e.Msg + " at " + where(e.src, e.Offset) }

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
	return refs(nil, t.segs)
}

// refs appends the paths of the placeholders in segs and in their defaults.
func refs(out []string, segs []segment) []string {
	for _, s := range segs {
		if s.ph != nil && s.ph.filter != asWritten {
			out = refs(append(out, s.ph.path), s.ph.def)
		}
	}
	return out
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

// asWritten is the filter of a placeholder whose filter takes an argument,
// ${x|length:100}: no filter of runner's or Prodigy's does, and Prodigy
// leaves such a placeholder as it is written, so runner does too (as text,
// never for the shell to expand).
const asWritten = "as written"

// AsWritten returns the placeholders that are left as written: those with
// a filter that takes an argument.
func (t *Template) AsWritten() []string {
	var out []string
	for _, s := range t.segs {
		if s.ph != nil && s.ph.filter == asWritten {
			out = append(out, s.ph.src)
		}
	}
	return out
}

// expand returns the text that replaces p.
func (p *placeholder) expand(lookup Lookup, mode Mode) (string, error) {
	switch {
	case p.filter == asWritten && mode == Plain:
		return p.src, nil
	case p.filter == asWritten:
		return p.ctx.escape(p.src, false)
	}
	if p.inert && mode == Shell {
		return p.forShell(), nil
	}
	text, ok, err := p.text(lookup)
	switch {
	case err != nil:
		return "", err
	case !ok:
		return p.forShell(), nil
	case mode == Plain:
		return text, nil
	}
	return p.ctx.escape(text, p.filter == "raw")
}

// forShell is p as the shell reads it when runner leaves it to the shell.
func (p *placeholder) forShell() string {
	if p.shell != "" {
		return p.shell
	}
	return p.src
}

// text returns p's value, or its default, as unescaped text; ok=false when
// runner leaves p to the shell: a name it does not define (not a path such
// as a.b, which no shell reads), whose default holds none of its variables
// either.
func (p *placeholder) text(lookup Lookup) (text string, ok bool, err error) {
	var v any
	if lookup != nil {
		v, ok = lookup(p.path)
	}
	if !ok && p.path == "uuid" && strings.HasPrefix(p.src, "${") {
		v, ok = newUUID(), true // a new one at each read, as Prodigy's; $uuid stays the shell's
	}
	_, unavailable := v.(Unavailable)
	switch {
	case ok && !(unavailable && p.def != nil): // a default stands in for a value runner does not have
		text, err = toText(v, p.filter == "json")
		if err != nil || text != "" || p.def == nil {
			return text, true, err
		}
	case !ok && !namespaced(p.path) && !p.defaultUses(lookup) && (p.def == nil || !strings.ContainsAny(p.path, ".[")):
		return "", false, nil
	case p.def == nil:
		return "", false, &UndefinedError{Path: p.path}
	}
	var b strings.Builder
	for _, s := range p.def {
		if s.ph == nil {
			b.WriteString(s.lit)
			continue
		}
		t, ok, err := s.ph.text(lookup)
		if err != nil {
			return "", false, err
		}
		if !ok {
			return "", false, fmt.Errorf("%s in the default is not a runner variable, so runner cannot write the default: define it in env", s.ph.src)
		}
		b.WriteString(t)
	}
	return b.String(), true, nil
}

// defaultUses reports whether p's default holds a placeholder that runner
// resolves (namespaced or defined), so that runner, not the shell, must
// pick between the value and the default.
func (p *placeholder) defaultUses(lookup Lookup) bool {
	for _, s := range p.def {
		if s.ph == nil {
			continue
		}
		if namespaced(s.ph.path) || s.ph.defaultUses(lookup) {
			return true
		}
		if lookup != nil {
			if _, ok := lookup(s.ph.path); ok {
				return true
			}
		}
	}
	return false
}

// namespaced reports whether path starts with one of Namespaces, or is
// a computed variable's: runner's, never the shell's.
func namespaced(path string) bool {
	if _, _, ok := Computed(path); ok {
		return true
	}
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

// newUUID returns a random (version 4) UUID.
func newUUID() string {
	var b [16]byte
	rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}
