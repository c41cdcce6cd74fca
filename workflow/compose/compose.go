// Package compose builds a standard workflow from Prodigy's composition
// keys (imports, extends, template, parameters, defaults, workflows) as
// Prodigy's composer does, on YAML nodes that keep their files' positions.
package compose

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// Keys are the top-level keys of composition; a standard workflow with
// any of them but defaults is composed (defaults alone is not, as in
// Prodigy, whose is_composable_workflow does not look for it).
var Keys = []string{"imports", "extends", "template", "parameters", "defaults", "workflows"}

// Source is one file of a composition, parsed.
type Source struct {
	File  string
	Src   []byte
	Root  *yaml.Node // the top-level mapping
	Nodes int        // the values Root expands to, its aliases followed
}

// Problem is an error or a warning at a place in one of the files, or
// the error of a file that could not be read or parsed (Err, positioned
// by Options.Load).
type Problem struct {
	File      string
	Line, Col int
	Msg       string
	Warning   bool
	Err       error
}

// Options are what a composition reads besides the main file.
type Options struct {
	// Load reads and parses a file the composition names (its problems
	// already positioned in it).
	Load func(path string) (*Source, error)
	// Params are --param and --param-file's values, over the file's.
	Params map[string]any
	// MaxNodes bounds the values of all the files composed, each counted
	// every time it is included, so that files that include each other
	// many times over are an error rather than an exhausted machine.
	MaxNodes int
}

// Result is a composed workflow: its top-level mapping without the
// composition keys, and the file of each node that came from another
// file than the main one.
type Result struct {
	Root     *yaml.Node
	Origins  map[*yaml.Node]*Source
	Problems []Problem // warnings, or the errors that stop it
}

// Uses reports whether a top-level mapping asks for composition.
func Uses(root *yaml.Node) bool {
	return slices.ContainsFunc(Keys, func(k string) bool { return k != "defaults" && key(root, k) != nil })
}

// composer is one composition's state.
type composer struct {
	opts     Options
	origins  map[*yaml.Node]*Source
	problems []Problem
	stack    []string // the files being composed, for cycles
	nodes    int      // the values of the files included so far
}

// Compose composes main.
func Compose(main *Source, opts Options) *Result {
	c := &composer{opts: opts, origins: map[*yaml.Node]*Source{}, nodes: main.Nodes}
	res := &Result{Origins: c.origins}
	if w := c.compose(main); w != nil && !c.failed() {
		params := c.params(w, opts.Params)
		if !c.failed() {
			c.substituteAll(w.commands, params)
			res.Root = w.finish()
		}
	}
	res.Problems = c.problems
	return res
}

// workflow is a file's workflow as composition sees it.
type workflow struct {
	src      *Source
	root     *yaml.Node // a copy of the file's mapping, composition keys left in
	commands []*yaml.Node
	required []*param
	optional []*param
	defaults []entry // in order, first wins
}

type entry struct {
	key, val *yaml.Node
}

type param struct {
	name       string
	at         *yaml.Node
	typ        string
	def        *yaml.Node
	validation *yaml.Node
	src        *Source
}

func (c *composer) failed() bool {
	return slices.ContainsFunc(c.problems, func(p Problem) bool { return !p.Warning })
}

func (c *composer) errorf(src *Source, n *yaml.Node, format string, args ...any) {
	p := Problem{File: src.File, Line: 1, Col: 1, Msg: fmt.Sprintf(format, args...)}
	if n != nil {
		p.Line, p.Col = max(n.Line, 1), max(n.Column, 1)
	}
	c.problems = append(c.problems, p)
}

func (c *composer) warnf(src *Source, n *yaml.Node, format string, args ...any) {
	c.errorf(src, n, format, args...)
	c.problems[len(c.problems)-1].Warning = true
}

// load reads a file the composition names at n in from.
func (c *composer) load(from *Source, n *yaml.Node, path, what string) *Source {
	if c.nodes > c.opts.MaxNodes {
		return nil // reported once, where the bound was passed
	}
	if slices.Contains(c.stack, filepath.Clean(path)) {
		c.errorf(from, n, "%s %s: a cycle (%s → %s): a workflow cannot include itself", what, path, strings.Join(c.stack, " → "), path)
		return nil
	}
	if _, err := os.Stat(path); err != nil {
		c.errorf(from, n, "%s %s: %v", what, path, err)
		return nil
	}
	src, err := c.opts.Load(path)
	if err != nil {
		c.problems = append(c.problems, Problem{File: path, Err: err})
		return nil
	}
	if c.nodes += src.Nodes; c.nodes > c.opts.MaxNodes {
		c.errorf(from, n, "%s %s: the composed workflow grows past %d values (files included in each other too many times?)", what, path, c.opts.MaxNodes)
		return nil
	}
	return src
}

// include loads and composes the file at path that n in w names; path ""
// is the error notFound.
func (c *composer) include(w *workflow, n *yaml.Node, path, what, notFound string) *workflow {
	if path == "" {
		c.errorf(w.src, n, "%s", notFound)
		return nil
	}
	src := c.load(w.src, n, path, what)
	if src == nil {
		return nil
	}
	return c.compose(src)
}

// compose builds one file's workflow: its imports, base and template
// applied (Prodigy's order), each of those composed first.
func (c *composer) compose(src *Source) *workflow {
	c.stack = append(c.stack, filepath.Clean(src.File))
	defer func() { c.stack = c.stack[:len(c.stack)-1] }()
	w := c.read(src)
	if w == nil {
		return nil
	}
	if n := value(w.root, "imports"); n != nil {
		c.imports(w, n)
	}
	if n := value(w.root, "extends"); n != nil {
		c.extends(w, n)
	}
	if n := value(w.root, "template"); n != nil {
		c.template(w, n)
	}
	if n := value(w.root, "workflows"); n != nil {
		c.workflows(w, n)
	}
	return w
}

// read takes a file's own commands, parameters and defaults.
func (c *composer) read(src *Source) *workflow {
	root := src.Root
	if root == nil || root.Kind != yaml.MappingNode {
		c.errorf(src, root, "a composed workflow is a mapping (commands, imports, extends, template...), not a list of steps")
		return nil
	}
	w := &workflow{src: src, root: c.copy(root, src)}
	if n := value(w.root, "commands"); n != nil {
		if n.Kind != yaml.SequenceNode {
			c.errorf(src, n, "commands must be a list of steps")
			return nil
		}
		w.commands = slices.Clone(n.Content)
	}
	if n := value(w.root, "parameters"); n != nil {
		c.parameters(w, n)
	}
	if n := value(w.root, "defaults"); n != nil {
		if n.Kind != yaml.MappingNode {
			c.errorf(src, n, "defaults must be a mapping of names to values")
		} else {
			for i := 0; i+1 < len(n.Content); i += 2 {
				w.defaults = append(w.defaults, entry{n.Content[i], n.Content[i+1]})
			}
		}
	}
	return w
}

// copy deep-copies n, recording the copies' file when it is not the
// main one (the first composed).
func (c *composer) copy(n *yaml.Node, src *Source) *yaml.Node {
	if n == nil {
		return nil
	}
	if n.Kind == yaml.AliasNode {
		return c.copy(n.Alias, src)
	}
	cp := *n
	cp.Content = make([]*yaml.Node, len(n.Content))
	for i, ch := range n.Content {
		cp.Content[i] = c.copy(ch, src)
	}
	if len(c.stack) > 1 {
		c.origins[&cp] = src
	}
	return &cp
}

var parameterTypes = []string{"string", "number", "boolean", "array", "object", "any"}

// parameters reads parameters: {required: [...], optional: [...]}.
func (c *composer) parameters(w *workflow, n *yaml.Node) {
	if n.Kind != yaml.MappingNode {
		c.errorf(w.src, n, "parameters must be a mapping with required and optional lists")
		return
	}
	for _, group := range []string{"required", "optional"} {
		l := value(n, group)
		if l == nil {
			continue
		}
		if l.Kind != yaml.SequenceNode {
			c.errorf(w.src, l, "parameters.%s must be a list of parameters", group)
			continue
		}
		for _, it := range l.Content {
			p := &param{at: it, typ: "any", src: w.src}
			if it.Kind != yaml.MappingNode || value(it, "name") == nil {
				c.errorf(w.src, it, "a parameter is a mapping with name, type, description, and default or validation")
				continue
			}
			p.name = value(it, "name").Value
			if t := value(it, "type"); t != nil {
				if !slices.Contains(parameterTypes, t.Value) {
					c.errorf(w.src, t, "parameter %s: type %q is not one of %s", p.name, t.Value, strings.Join(parameterTypes, ", "))
				}
				p.typ = t.Value
			}
			p.def, p.validation = value(it, "default"), value(it, "validation")
			if p.validation != nil {
				if _, err := regexp.Compile(p.validation.Value); err != nil {
					c.errorf(w.src, p.validation, "parameter %s: validation is a regular expression its value must match: %v", p.name, err)
				}
			}
			if group == "required" {
				w.required = append(w.required, p)
			} else {
				w.optional = append(w.optional, p)
			}
		}
	}
}

// merge adds from's commands after w's, and its parameters and defaults
// (w's defaults win): Prodigy's merge_workflows.
func (w *workflow) merge(from *workflow) {
	w.commands = append(w.commands, from.commands...)
	w.required = append(w.required, from.required...)
	w.optional = append(w.optional, from.optional...)
	for _, d := range from.defaults {
		if !slices.ContainsFunc(w.defaults, func(e entry) bool { return e.key.Value == d.key.Value }) {
			w.defaults = append(w.defaults, d)
		}
	}
}

// imports applies imports: [{path, alias, selective}].
func (c *composer) imports(w *workflow, n *yaml.Node) {
	if n.Kind != yaml.SequenceNode {
		c.errorf(w.src, n, "imports must be a list of {path, selective}")
		return
	}
	for _, it := range n.Content {
		p := value(it, "path")
		if it.Kind != yaml.MappingNode || p == nil {
			c.errorf(w.src, it, "an import is a mapping with path (and alias or selective)")
			continue
		}
		imported := c.include(w, p, p.Value, "import", "")
		if imported == nil {
			continue
		}
		sel := value(it, "selective")
		switch {
		case value(it, "alias") != nil:
			c.warnf(w.src, value(it, "alias"), "import %s under an alias adds nothing to this workflow (Prodigy keeps it for references that nothing reads)", p.Value)
		case sel != nil && len(sel.Content) > 0:
			c.selective(w, imported, sel)
		default:
			w.merge(imported)
		}
	}
}

// selective imports the listed commands (by index) and parameters (by
// name).
func (c *composer) selective(w, from *workflow, sel *yaml.Node) {
	for _, it := range sel.Content {
		if i, err := strconv.Atoi(it.Value); err == nil && i >= 0 && i < len(from.commands) {
			w.commands = append(w.commands, from.commands[i])
			continue
		}
		if p := find(from.required, it.Value); p != nil {
			w.required = append(w.required, p)
			continue
		}
		if p := find(from.optional, it.Value); p != nil {
			w.optional = append(w.optional, p)
			continue
		}
		c.errorf(w.src, it, "selective: %q is neither the index of one of %s's %d commands nor one of its parameters", it.Value, from.src.File, len(from.commands))
	}
}

func find(ps []*param, name string) *param {
	for _, p := range ps {
		if p.name == name {
			return p
		}
	}
	return nil
}

// baseDirs are where extends: NAME is looked for, as NAME.yml, in order.
var baseDirs = []string{"bases", "templates", "workflows", ""}

// extends applies the base workflow: the base's, with this file's
// commands when it has any, and its parameters and defaults when it
// has them; this file's other keys over the base's.
func (c *composer) extends(w *workflow, n *yaml.Node) {
	var path string
	for _, dir := range baseDirs {
		p := filepath.Join(dir, n.Value+".yml")
		if _, err := os.Stat(p); err == nil {
			path = p
			break
		}
	}
	base := c.include(w, n, path, "extends", fmt.Sprintf("extends: base workflow %q not found (looked for %s.yml in bases/, templates/, workflows/ and ./)", n.Value, n.Value))
	if base == nil {
		return
	}
	if len(w.commands) == 0 {
		w.commands = base.commands
	}
	if value(w.root, "parameters") == nil {
		w.required, w.optional = base.required, base.optional
	}
	if value(w.root, "defaults") == nil {
		w.defaults = base.defaults
	}
	for i := 0; i+1 < len(base.root.Content); i += 2 {
		k := base.root.Content[i].Value
		if !slices.Contains(Keys, k) && k != "commands" && value(w.root, k) == nil {
			w.root.Content = append(w.root.Content, base.root.Content[i], base.root.Content[i+1])
		}
	}
}

// template applies template: {name, source, with, override}: the
// template's workflow, its with values substituted and its overrides
// applied, its commands after this file's.
func (c *composer) template(w *workflow, n *yaml.Node) {
	s := value(n, "source")
	if n.Kind != yaml.MappingNode || s == nil {
		c.errorf(w.src, n, "template needs source: a template file, or the name of one in .prodigy/templates/ or templates/")
		return
	}
	path := s.Value
	if _, err := os.Stat(path); err != nil {
		path = registry(s.Value)
	}
	t := c.include(w, s, path, "template", fmt.Sprintf("template %q not found: not a file, nor %s.yml in .prodigy/templates/ or templates/", s.Value, s.Value))
	if t == nil {
		return
	}
	if with := withValues(n); len(with) > 0 {
		c.substituteAll(t.commands, with)
	}
	if o := value(n, "override"); o != nil {
		for i := 0; i+1 < len(o.Content); i += 2 {
			k, v := o.Content[i], o.Content[i+1]
			switch {
			case k.Value == "commands" && v.Kind == yaml.SequenceNode:
				t.commands = v.Content
			default:
				c.warnf(w.src, k, "template override %q has no effect: runner overrides a template's commands only", k.Value)
			}
		}
	}
	w.merge(t)
}

// withValues are the values a template mapping's with: gives.
func withValues(template *yaml.Node) map[string]any {
	params := map[string]any{}
	if with := value(template, "with"); with != nil {
		for i := 0; i+1 < len(with.Content); i += 2 {
			params[with.Content[i].Value] = decode(with.Content[i+1])
		}
	}
	return params
}

// registry returns the template NAME's file in the local registry: the
// first of .prodigy/templates and templates that exists.
func registry(name string) string {
	for _, dir := range []string{filepath.Join(".prodigy", "templates"), "templates"} {
		if fi, err := os.Stat(dir); err == nil && fi.IsDir() {
			p := filepath.Join(dir, name+".yml")
			if _, err := os.Stat(p); err == nil {
				return p
			}
			return ""
		}
	}
	return ""
}

// workflows checks Prodigy's sub-workflows (each source exists), which
// Prodigy drops after the check: a warning says so.
func (c *composer) workflows(w *workflow, n *yaml.Node) {
	for i := 0; i+1 < len(n.Content); i += 2 {
		if s := value(n.Content[i+1], "source"); s != nil {
			if _, err := os.Stat(s.Value); err != nil {
				c.errorf(w.src, s, "sub-workflow %s: source %s: %v", n.Content[i].Value, s.Value, err)
			}
		}
	}
	c.warnf(w.src, key(w.root, "workflows"), "workflows: sub-workflows are checked and not run, as in Prodigy")
}

// params are the values of the parameters: the file's defaults, the
// template's with, the parameters' own defaults, and opts' (--param),
// checked against the parameters.
func (c *composer) params(w *workflow, given map[string]any) map[string]any {
	params := map[string]any{}
	for _, p := range slices.Concat(w.required, w.optional) {
		if p.def != nil {
			params[p.name] = decode(p.def)
		}
	}
	for _, d := range w.defaults {
		params[d.key.Value] = decode(d.val)
	}
	maps.Copy(params, withValues(value(w.root, "template")))
	maps.Copy(params, given)
	for _, p := range w.required {
		if _, ok := params[p.name]; !ok {
			c.errorf(p.src, p.at, "required parameter %s is not given: give it with --param %s=VALUE, --param-file or defaults", p.name, p.name)
		}
	}
	for _, p := range slices.Concat(w.required, w.optional) {
		v, ok := params[p.name]
		if !ok {
			continue
		}
		if !typed(p.typ, v) {
			c.errorf(p.src, p.at, "parameter %s must be %s, not %s", p.name, article(p.typ), text(v))
		}
		if p.validation != nil {
			if re, err := regexp.Compile(p.validation.Value); err == nil && !re.MatchString(text(v)) {
				c.errorf(p.src, p.validation, "parameter %s: %s does not match its validation %s", p.name, text(v), p.validation.Value)
			}
		}
	}
	return params
}

func typed(typ string, v any) bool {
	switch typ {
	case "string":
		_, ok := v.(string)
		return ok
	case "number":
		switch v.(type) {
		case int, int64, float64, json.Number:
			return true
		}
		return false
	case "boolean":
		_, ok := v.(bool)
		return ok
	case "array":
		_, ok := v.([]any)
		return ok
	case "object":
		_, ok := v.(map[string]any)
		return ok
	}
	return true
}

func article(typ string) string {
	if typ == "array" || typ == "object" || typ == "any" {
		return "an " + typ
	}
	return "a " + typ
}

// placeholder is ${NAME}, Prodigy's parameter reference.
var placeholder = regexp.MustCompile(`\$\{([^}]+)\}`)

// substituteAll puts params' values in place of ${NAME} in each command's
// claude, shell and id (a bare string command whole), as Prodigy's
// substitute_parameters_in_command; a ${X} that is no parameter is left
// for the run (a variable such as ${shell.output}).
func (c *composer) substituteAll(commands []*yaml.Node, params map[string]any) {
	for _, cmd := range commands {
		switch cmd.Kind {
		case yaml.ScalarNode:
			cmd.Value = substitute(cmd.Value, params)
		case yaml.MappingNode:
			for _, k := range []string{"claude", "shell", "id"} {
				if v := value(cmd, k); v != nil && v.Kind == yaml.ScalarNode {
					v.Value = substitute(v.Value, params)
				}
			}
		}
	}
}

func substitute(s string, params map[string]any) string {
	return placeholder.ReplaceAllStringFunc(s, func(m string) string {
		if v, ok := params[m[2:len(m)-1]]; ok {
			return text(v)
		}
		return m
	})
}

// text is a value as Prodigy substitutes it: a string as it is, other
// values as JSON, null as "".
func text(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case nil:
		return ""
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// decode is a YAML value as a Go value (numbers as int or float64,
// mappings as map[string]any).
func decode(n *yaml.Node) any {
	var v any
	if err := n.Decode(&v); err != nil {
		return n.Value
	}
	return v
}

// finish is the composed top-level mapping: composition keys gone, the
// commands composed, the defaults added to env where env lacks them.
func (w *workflow) finish() *yaml.Node {
	root := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Line: w.root.Line, Column: w.root.Column}
	var commandsKey *yaml.Node
	for i := 0; i+1 < len(w.root.Content); i += 2 {
		k := w.root.Content[i]
		switch {
		case k.Value == "commands":
			commandsKey = k
		case !slices.Contains(Keys, k.Value):
			root.Content = append(root.Content, k, w.root.Content[i+1])
		}
	}
	if commandsKey == nil {
		commandsKey = &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: "commands", Line: w.root.Line, Column: w.root.Column}
	}
	root.Content = append(root.Content, commandsKey, &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq", Content: w.commands, Line: commandsKey.Line, Column: commandsKey.Column})
	if len(w.defaults) > 0 {
		env := value(root, "env")
		if env == nil {
			env = &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Line: w.root.Line, Column: w.root.Column}
			root.Content = append(root.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: "env", Line: w.root.Line, Column: w.root.Column}, env)
		}
		if env.Kind == yaml.MappingNode {
			for _, d := range w.defaults {
				if value(env, d.key.Value) == nil {
					v := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: text(decode(d.val)), Line: d.val.Line, Column: d.val.Column}
					env.Content = append(env.Content, d.key, v)
				}
			}
		}
	}
	return root
}

// value returns the value of key in mapping m, or nil.
func value(m *yaml.Node, k string) *yaml.Node {
	if kn := key(m, k); kn != nil {
		for i := 0; i+1 < len(m.Content); i += 2 {
			if m.Content[i] == kn {
				return m.Content[i+1]
			}
		}
	}
	return nil
}

// key returns the key node of key in mapping m, or nil.
func key(m *yaml.Node, k string) *yaml.Node {
	if m == nil || m.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == k {
			return m.Content[i]
		}
	}
	return nil
}
