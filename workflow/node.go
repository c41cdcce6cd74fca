package workflow

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/runnerdev/runner/workflow/compose"
)

// decoder turns yaml.Nodes into workflow types, collecting every problem
// with its position instead of stopping at the first.
type decoder struct {
	file    string
	src     []byte
	errs    ParseErrors
	warns   ParseErrors
	nodes   int // the values the file expands to (checkExpansion)
	ids     map[string]*yaml.Node
	stepsAt map[string]stepAt // where each id's step stands
	at      stepAt            // where the values being read are
	doOf    *stepAt           // the foreach whose do steps are being read; nil outside one
	refs    []stepRef
	nsRefs  []nsRef // reads of ${NS.NAME} in runner's namespaces
	// plainRefs are the reads of ${NAME}, checked against the names the
	// workflow defines.
	plainRefs []plainRef
	// forWords are the placeholders among the words of shell for loops.
	forWords []forWord
	// readsGitContext is set when a condition reads ${workflow.commits}
	// or another git-context variable.
	readsGitContext bool
	// readsResults is set when a condition reads ${map.results} or
	// ${map.results_file}.
	readsResults bool
	// onIncompleteCommands is set while on_incomplete is read, whose
	// commands may read ${validation.*}.
	onIncompleteCommands bool
	loops                int  // foreach loops whose do steps are being read
	inParallel           bool // the steps of a parallel: block are being read
	// handlerPath is Step.Path of the handler's step being read.
	handlerPath string
	// failureOnSuccess is the on_success of the on_failure handler just
	// read, for the step to read once it has its name.
	failureOnSuccess *yaml.Node
	short            shortNames // capture names and outputs, for ${NAME.field} and ${ID.field}
	// inReduce is set while the reduce phase is read, where a failure
	// handler runs once (Prodigy's reduce), never as a fix loop.
	inReduce bool
	// params are a composed workflow's parameters given on the command
	// line; origins the file of each node a composition took from
	// another file (composed.go).
	params  map[string]any
	origins map[*yaml.Node]*compose.Source
}

// errorf records a problem at n's position.
func (d *decoder) errorf(n *yaml.Node, format string, args ...any) {
	if len(d.errs) >= maxErrors {
		return
	}
	e := &ParseError{File: d.fileOf(n), Pos: Pos{Line: 1, Col: 1}, Msg: fmt.Sprintf(format, args...)} // whole-file problems: 1:1
	if n != nil {
		e.Line, e.Col = max(n.Line, 1), max(n.Column, 1)
	}
	d.errs = append(d.errs, e)
}

// warnf records a warning at n's position; the same message is given
// once per file, at its first position.
func (d *decoder) warnf(n *yaml.Node, format string, args ...any) {
	at := Pos{Line: 1, Col: 1}
	if n != nil {
		at = Pos{Line: max(n.Line, 1), Col: max(n.Column, 1)}
	}
	d.warnIn(d.fileOf(n), at, format, args...)
}

// warnAt records a warning at a position (the same message once).
func (d *decoder) warnAt(at Pos, format string, args ...any) {
	d.warnIn(d.file, at, format, args...)
}

// warnIn records a warning at a position in a file (the same message
// once).
func (d *decoder) warnIn(file string, at Pos, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if len(d.warns) >= maxErrors || slices.ContainsFunc(d.warns, func(w *ParseError) bool { return w.Msg == msg }) {
		return
	}
	d.warns = append(d.warns, &ParseError{File: file, Pos: at, Msg: msg, Warning: true})
}

// resolve follows aliases (checkExpansion made sure they end) and checks
// the node's tag; it returns nil for a nil node or a tag runner refuses.
func (d *decoder) resolve(n *yaml.Node) *yaml.Node {
	for n != nil && n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	if n == nil {
		// A caller passed an absent or null value on: report it rather
		// than crash (every caller is meant to check for null first).
		d.errorf(nil, "a value is missing where one is needed")
		return nil
	}
	if tag := n.ShortTag(); !standardTags[tag] {
		d.errorf(n, "YAML tag %s is not supported (a workflow holds plain strings, numbers, booleans, lists and mappings)", tag)
		return nil
	}
	return n
}

// standardTags are the YAML types a workflow may hold.
var standardTags = map[string]bool{
	"!!str": true, "!!int": true, "!!float": true, "!!bool": true, "!!null": true,
	"!!map": true, "!!seq": true, "!!merge": true,
}

// describe names what a node holds, for "must be X, not Y" messages.
func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		switch n.ShortTag() {
		case "!!null":
			return "null"
		case "!!str":
			return strconv.Quote(Abbreviate(n.Value))
		}
		return n.Value
	}
	return "empty"
}

func isNull(n *yaml.Node) bool {
	return n == nil || n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null"
}

// fields is a mapping whose keys were checked against the known ones.
type fields struct {
	node    *yaml.Node
	vals    map[string]*yaml.Node
	keys    map[string]*yaml.Node
	unknown int // keys reported as unknown
}

// get returns the value of key, or nil when absent or null.
func (f *fields) get(key string) *yaml.Node {
	if f == nil || isNull(f.vals[key]) {
		return nil
	}
	return f.vals[key]
}

// has reports whether key was written (even as null).
func (f *fields) has(key string) bool { _, ok := f.keys[key]; return ok }

// key returns the key node of key, or the mapping itself.
func (f *fields) key(key string) *yaml.Node {
	if k := f.keys[key]; k != nil {
		return k
	}
	return f.node
}

// oneOf returns the value of whichever alias spelling was written, and
// reports writing two of them.
func (d *decoder) oneOf(f *fields, names ...string) *yaml.Node {
	var found string
	for _, name := range names {
		if !f.has(name) {
			continue
		}
		if found != "" {
			d.errorf(f.key(name), "%q and %q mean the same; write only one", found, name)
			continue
		}
		found = name
	}
	if found == "" {
		return nil
	}
	return f.get(found)
}

// entry is one key and its value in a mapping.
type entry struct{ key, val *yaml.Node }

// mappingNode resolves n and checks that it is a mapping, reporting
// "WHAT must be SHAPE, not ..." otherwise; it returns nil then.
func (d *decoder) mappingNode(n *yaml.Node, what, shape string) *yaml.Node {
	m := d.resolve(n)
	if m != nil && m.Kind != yaml.MappingNode {
		d.errorf(m, "%s must be %s, not %s", what, shape, describe(m))
		return nil
	}
	return m
}

// entries returns the pairs of a (resolved) mapping in order, with merge
// keys (<<: *anchor, or a list of them) expanded: explicit keys win over
// merged ones. It reports keys that are not plain names and duplicate
// keys (a merge that includes its own mapping is an alias cycle,
// refused before).
func (d *decoder) entries(n *yaml.Node, what string) ([]entry, bool) {
	var (
		out    []entry
		seen   = map[string]*yaml.Node{}
		merged []*yaml.Node
	)
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := d.resolve(n.Content[i]), n.Content[i+1]
		switch {
		case k == nil:
			return nil, false
		case k.Kind != yaml.ScalarNode:
			d.errorf(k, "%s: keys must be plain names, not %s", what, describe(k))
		case k.Value == "<<" && k.ShortTag() == "!!merge":
			merged = append(merged, v)
		case seen[k.Value] != nil:
			d.errorf(k, "key %q appears twice in %s (first at line %d)", k.Value, what, seen[k.Value].Line)
		default:
			seen[k.Value] = k
			out = append(out, entry{k, v})
		}
	}
	if len(merged) == 0 {
		return out, true
	}
	for len(merged) > 0 {
		m := d.resolve(merged[0])
		merged = merged[1:]
		if m == nil {
			return out, false
		}
		if m.Kind == yaml.SequenceNode {
			merged = append(slices.Clone(m.Content), merged...)
			continue
		}
		if m = d.mappingNode(m, what, "a mapping"); m == nil {
			continue
		}
		sub, ok := d.entries(m, what)
		if !ok {
			continue
		}
		for _, e := range sub {
			if seen[e.key.Value] == nil {
				seen[e.key.Value] = e.key
				out = append(out, e)
			}
		}
	}
	return out, true
}

// mapping checks that n is a mapping of the keys in known and returns
// its fields (merge keys expanded). As Prodigy's structs, which have no
// deny_unknown_fields, it passes over a key it does not know with a
// warning (--strict: an error); a key close to a known one is a likely
// misspelling, an error with its did-you-mean.
func (d *decoder) mapping(n *yaml.Node, what string, known []string) *fields {
	return d.keyed(n, what, known, false)
}

// choice is mapping for a mapping whose key names one of several forms
// (a backoff strategy), as Prodigy's enums: a key it does not know is
// always an error.
func (d *decoder) choice(n *yaml.Node, what string, known []string) *fields {
	return d.keyed(n, what, known, true)
}

// keyed reads a mapping of the known keys; strict makes every unknown key
// an error.
func (d *decoder) keyed(n *yaml.Node, what string, known []string, strict bool) *fields {
	m := d.mappingNode(n, what, "a mapping")
	if m == nil {
		return nil
	}
	es, ok := d.entries(m, what)
	if !ok {
		return nil
	}
	f := &fields{node: m, vals: map[string]*yaml.Node{}, keys: map[string]*yaml.Node{}}
	// Beside a Prodigy feature runner does not run, other unknown keys are
	// most likely the feature's own (foreach's do): its message is the
	// one error.
	feature := slices.ContainsFunc(es, func(e entry) bool { return unsupported[e.key.Value] != "" && !slices.Contains(known, e.key.Value) })
	for _, e := range es {
		switch k := e.key.Value; {
		case slices.Contains(known, k):
			f.keys[k], f.vals[k] = e.key, e.val
		case feature && unsupported[k] == "":
			f.unknown++
		case strict || unsupported[k] != "" || typo(k, known) != "":
			d.unknownKey(e.key, what, known)
			f.unknown++
		default:
			d.ignoredKey(e.key, known)
		}
	}
	return f
}

// missing records that a mapping lacks a key it needs, unless one of its
// keys was reported already (misspelt, or a Prodigy feature runner does
// not run): that error explains the absence, and a second one would only
// repeat it.
func (d *decoder) missing(f *fields, at *yaml.Node, format string, args ...any) {
	if f != nil && f.unknown > 0 {
		return
	}
	d.errorf(at, format, args...)
}

// unsupported are Prodigy features runner does not run and whose absence
// would change what the file does: errors, unlike the other keys runner
// does not know, which are warnings.
var unsupported = map[string]string{
	"goal_seek": "goal_seek (Prodigy's iterative refinement with a scoring command) is not supported; use repeat with an until condition",
}

// unknownKey reports a key that is not allowed where it stands.
func (d *decoder) unknownKey(k *yaml.Node, what string, known []string) {
	if msg, ok := unsupported[k.Value]; ok {
		d.errorf(k, "%s", msg)
		return
	}
	msg := fmt.Sprintf("unknown key %q in %s", k.Value, what)
	if s := Suggest(k.Value, known); s != "" {
		msg += fmt.Sprintf(" (did you mean %q?)", s)
	} else {
		msg += " (known keys: " + strings.Join(known, ", ") + ")"
	}
	d.errorf(k, "%s", msg)
}

// ignoredKey warns of a key runner passes over, as Prodigy does: once per
// key and file, at its first place.
func (d *decoder) ignoredKey(k *yaml.Node, known []string) {
	hint := ""
	if s := Suggest(k.Value, known); s != "" {
		hint = fmt.Sprintf(" (did you mean %q?)", s)
	}
	d.warnf(k, "ignored: runner does not know %q here; Prodigy ignores it too%s", k.Value, hint)
}

// Suggest returns the known word closest to w, if it is close enough to be
// a misspelling or w begins it: the did-you-mean of runner's messages, for
// the command line's flags as for a file's keys.
func Suggest(w string, known []string) string {
	if best, dist := closest(w, known); dist <= max(1, len(w)/3) {
		return best
	}
	for _, k := range known {
		if len(w) >= 4 && strings.HasPrefix(k, strings.ToLower(w)) {
			return k
		}
	}
	return ""
}

// typo returns the known word that w is most likely a misspelling of:
// one edit away (a letter added, left out, changed, or two swapped),
// else "". A key further away (Prodigy's optional beside options) is
// more likely one runner does not know.
func typo(w string, known []string) string {
	for _, k := range known {
		if oneEdit(strings.ToLower(w), k) {
			return k
		}
	}
	return ""
}

// oneEdit reports whether a and b differ by one edit: a byte inserted,
// deleted or replaced, or two adjacent bytes swapped.
func oneEdit(a, b string) bool {
	if len(a) > len(b) {
		a, b = b, a
	}
	i := 0
	for i < len(a) && a[i] == b[i] {
		i++
	}
	switch {
	case len(b)-len(a) == 1:
		return a[i:] == b[i+1:]
	case len(a) != len(b) || i == len(a):
		return false
	}
	return a[i+1:] == b[i+1:] || i+1 < len(a) && a[i] == b[i+1] && a[i+1] == b[i] && a[i+2:] == b[i+2:]
}

// closest returns the known word at the least edit distance from w, and
// that distance.
func closest(w string, known []string) (string, int) {
	best, bestDist := "", math.MaxInt
	for _, k := range known {
		if dist := editDistance(strings.ToLower(w), k); dist < bestDist {
			best, bestDist = k, dist
		}
	}
	return best, bestDist
}

// editDistance is the Levenshtein distance between a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// scalar returns n resolved when it is a non-null scalar.
func (d *decoder) scalar(n *yaml.Node, what, want string) *yaml.Node {
	if n = d.resolve(n); n == nil {
		return nil
	}
	if n.Kind != yaml.ScalarNode || isNull(n) {
		d.errorf(n, "%s must be %s, not %s", what, want, describe(n))
		return nil
	}
	return n
}

// str reads a string; numbers and booleans count as their text.
func (d *decoder) str(n *yaml.Node, what string) (string, bool) {
	n = d.scalar(n, what, "a string")
	if n == nil {
		return "", false
	}
	return n.Value, true
}

// integer reads a whole number that is at least least.
func (d *decoder) integer(n *yaml.Node, what string, least int) (int, bool) {
	n = d.scalar(n, what, "a whole number")
	if n == nil {
		return 0, false
	}
	var v int
	if n.ShortTag() != "!!int" || n.Decode(&v) != nil {
		d.errorf(n, "%s must be a whole number, not %s", what, describe(n))
		return 0, false
	}
	if v < least {
		d.errorf(n, "%s must be at least %d, not %d", what, least, v)
		return 0, false
	}
	return v, true
}

// number reads a finite number in [lo, hi].
func (d *decoder) number(n *yaml.Node, what string, lo, hi float64) (float64, bool) {
	n = d.scalar(n, what, "a number")
	if n == nil {
		return 0, false
	}
	var v float64
	if tag := n.ShortTag(); tag != "!!int" && tag != "!!float" || n.Decode(&v) != nil || math.IsNaN(v) {
		d.errorf(n, "%s must be a number, not %s", what, describe(n))
		return 0, false
	}
	if v < lo || v > hi {
		d.errorf(n, "%s must be between %g and %g, not %g", what, lo, hi, v)
		return 0, false
	}
	return v, true
}

// boolean reads true or false.
func (d *decoder) boolean(n *yaml.Node, what string) (bool, bool) {
	n = d.scalar(n, what, "true or false")
	if n == nil {
		return false, false
	}
	var v bool
	if n.ShortTag() != "!!bool" || n.Decode(&v) != nil {
		d.errorf(n, "%s must be true or false, not %s", what, describe(n))
		return false, false
	}
	return v, true
}

// duration reads a duration (see ParseDuration); it must not be negative.
func (d *decoder) duration(n *yaml.Node, what string) (time.Duration, bool) {
	n = d.scalar(n, what, "a duration")
	if n == nil {
		return 0, false
	}
	v, err := ParseDuration(n.Value)
	if err != nil {
		d.errorf(n, "%s: %v", what, err)
		return 0, false
	}
	return v, true
}

// positive reads a duration that must be greater than zero.
func (d *decoder) positive(n *yaml.Node, what string) (time.Duration, bool) {
	v, ok := d.duration(n, what)
	if ok && v <= 0 {
		d.errorf(n, "%s must be longer than zero", what)
		return 0, false
	}
	return v, ok
}

// enum reads one of the allowed words.
func (d *decoder) enum(n *yaml.Node, what string, allowed ...string) (string, bool) {
	s, ok := d.str(n, what)
	if !ok {
		return "", false
	}
	if !slices.Contains(allowed, s) {
		msg := fmt.Sprintf("%s must be one of %s, not %q", what, strings.Join(allowed, ", "), s)
		if sug := Suggest(s, allowed); sug != "" {
			msg += fmt.Sprintf(" (did you mean %q?)", sug)
		}
		d.errorf(n, "%s", msg)
		return "", false
	}
	return s, true
}

// list returns the items of a sequence, resolved.
func (d *decoder) list(n *yaml.Node, what string) ([]*yaml.Node, bool) {
	if n = d.resolve(n); n == nil {
		return nil, false
	}
	if n.Kind != yaml.SequenceNode {
		d.errorf(n, "%s must be a list, not %s", what, describe(n))
		return nil, false
	}
	return n.Content, true
}

// pos is n's position.
func pos(n *yaml.Node) Pos { return Pos{Line: n.Line, Col: n.Column} }

// Abbreviate shortens s to at most 40 bytes, for messages.
func Abbreviate(s string) string {
	if len(s) > 40 {
		return s[:37] + "..."
	}
	return s
}
