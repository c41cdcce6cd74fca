package workflow

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"gopkg.in/yaml.v3"

	"github.com/runnerdev/runner/errorpolicy"
	"github.com/runnerdev/runner/workflow/compose"
	"github.com/runnerdev/runner/workflow/interp"
)

// MaxFileSize is the largest workflow file runner reads.
const MaxFileSize = 4 << 20

// ErrNotRegular is the error for a path runner reads (a workflow file,
// or a file it names) that is not a regular file: reading a named pipe
// or a device could block or never end.
var ErrNotRegular = errors.New("not a regular file")

// errTooLarge is the error for a file a workflow names (an env file, a
// secret file, a check's result file) that is larger than MaxFileSize.
var errTooLarge = errors.New("file too large")

// Load reads and parses a workflow file.
func Load(path string) (*Workflow, error) {
	src, err := ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Parse(path, src)
}

// ReadFile reads a workflow file: at most MaxFileSize+1 bytes, so that
// Parse reports a larger one. Anything but a regular file is refused
// without blocking: the open is non-blocking (a named pipe's would wait
// for a writer) and the check is made on the opened file, so nothing can
// be swapped in between.
func ReadFile(path string) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: %w (%s)", path, ErrNotRegular, fileKind(fi.Mode()))
	}
	return io.ReadAll(io.LimitReader(f, MaxFileSize+1))
}

// ReadNamedFile reads a file that a workflow names and runner reads
// whole (an env file, a secret file, a check's result file) as ReadFile
// reads a workflow file: anything but a regular file is refused without
// blocking, and a file larger than MaxFileSize is refused (errTooLarge)
// after reading at most one byte more.
func ReadNamedFile(path string) ([]byte, error) {
	data, err := ReadFile(path)
	if err == nil && len(data) > MaxFileSize {
		return nil, fmt.Errorf("%s: %w: runner reads at most %d MiB", path, errTooLarge, MaxFileSize>>20)
	}
	return data, err
}

// fileKind names what a file that is not regular is.
func fileKind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a block device"
	}
	return "an irregular file"
}

// Parse parses and validates a workflow file's content. Every problem found
// is reported, as ParseErrors, before anything could run; file names the
// source in them. A file with errors has its warnings in them too
// (Warning set), in file order; a valid file's are wf.Warnings.
func Parse(file string, src []byte) (*Workflow, error) {
	return ParseWith(file, src, Options{})
}

// Options are what parsing a file takes besides its content.
type Options struct {
	// Params are the values of a composed workflow's parameters given on
	// the command line (--param, --param-file).
	Params map[string]any
}

// ParseWith is Parse with options.
func ParseWith(file string, src []byte, opts Options) (*Workflow, error) {
	d := &decoder{file: file, src: src, ids: map[string]*yaml.Node{}, stepsAt: map[string]stepAt{}, at: stepAt{phase: "env"}, params: opts.Params}
	root := d.document(src)
	if root == nil {
		return nil, d.errs
	}
	wf := d.workflow(root)
	d.checkRefs()
	d.checkSiblingCaptures()
	d.checkNamespaceRefs(wf)
	d.checkNearNames(wf)
	if len(d.errs) > 0 {
		// The warnings too, among the errors: a file being fixed shows
		// all that is wrong with it at once.
		problems := append(d.errs, d.warns...)
		d.sortByPosition(problems)
		return nil, problems
	}
	d.sortByPosition(d.warns)
	wf.Warnings = d.warns
	return wf, nil
}

// sortByPosition puts es in file order, the file's own first, then
// those of the files it is composed of.
func (d *decoder) sortByPosition(es ParseErrors) {
	slices.SortStableFunc(es, func(a, b *ParseError) int {
		return cmp.Or(cmp.Compare(d.fileRank(a.File), d.fileRank(b.File)), strings.Compare(a.File, b.File),
			cmp.Compare(a.Line, b.Line), cmp.Compare(a.Col, b.Col))
	})
}

var yamlLine = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^yaml: line (\d+): (.*)$`) })

// document parses src into its one YAML (or JSON) document.
func (d *decoder) document(src []byte) *yaml.Node {
	if len(src) > MaxFileSize {
		d.errorf(nil, "file is larger than %d MiB", MaxFileSize>>20)
		return nil
	}
	if nul := bytes.IndexByte(src, 0); nul >= 0 {
		line := 1 + bytes.Count(src[:nul], []byte("\n"))
		col := nul - bytes.LastIndexByte(src[:nul], '\n')
		d.errs = append(d.errs, &ParseError{File: d.file, Pos: Pos{Line: line, Col: col}, Msg: "file is binary (a NUL byte here), not YAML or JSON"})
		return nil
	}
	if strings.EqualFold(filepath.Ext(d.file), ".json") && !d.checkJSON(src) {
		return nil
	}
	dec := yaml.NewDecoder(bytes.NewReader(src))
	var doc yaml.Node
	if err := d.yamlDecode(dec, &doc); err != nil {
		if errors.Is(err, io.EOF) {
			d.errorf(nil, "file is empty: want a list of steps or a workflow mapping")
		}
		return nil
	}
	var extra yaml.Node
	if err := d.yamlDecode(dec, &extra); err == nil {
		d.errorf(&extra, "a second YAML document (after ---); a workflow file holds one")
		return nil
	} else if !errors.Is(err, io.EOF) {
		return nil
	}
	if len(doc.Content) == 0 || isNull(doc.Content[0]) {
		d.errorf(&doc, "file is empty: want a list of steps or a workflow mapping")
		return nil
	}
	if !d.checkExpansion(doc.Content[0]) {
		return nil
	}
	return doc.Content[0]
}

// yamlDecode decodes one document, turning syntax errors (and yaml.v3's
// panics on pathological input) into positioned errors. io.EOF is returned
// unrecorded.
func (d *decoder) yamlDecode(dec *yaml.Decoder, n *yaml.Node) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%v", r)
			d.errorf(nil, "invalid YAML: %v", r)
		}
	}()
	err = dec.Decode(n)
	if err == nil || errors.Is(err, io.EOF) {
		return err
	}
	msg, at := strings.TrimPrefix(err.Error(), "yaml: "), Pos{Line: 1, Col: 1}
	if m := yamlLine().FindStringSubmatch(err.Error()); m != nil {
		at.Line, _ = strconv.Atoi(m[1])
		msg = m[2]
		if strings.Contains(msg, "end of stream") {
			at = quoteOpening(d.src, at.Line) // an unclosed quote is better shown where it opens
		} else if p, ok := yamlProblemPos(d.src, at.Line, err.Error()); ok {
			at = p
		}
	}
	switch {
	case at.Col == 1 && strings.Contains(msg, "expected '-' indicator"):
		msg += " (a file that is a list of steps has no keys after it: put the steps under commands:)"
	case at.Col == 1 && strings.Contains(msg, "did not find expected key"):
		msg += " (a workflow mapping has no list items at the top level: indent the step under commands:)"
	case indentationProblem(d.src, at, msg):
		msg += " (check the indentation of the line above)"
	case strings.Contains(msg, "mapping values are not allowed"):
		msg += ` (a value that contains ": " must be quoted, or written as a block: shell: |)`
	}
	if strings.Contains(msg, "cannot start any token") && bytes.Contains(d.src, []byte("\n\t")) {
		msg += " (YAML indents with spaces, not tabs)"
	}
	d.errs = append(d.errs, &ParseError{File: d.file, Pos: at, Msg: "invalid YAML: " + msg})
	return err
}

// checkJSON reports a JSON syntax error at its line and column.
func (d *decoder) checkJSON(src []byte) bool {
	var v any
	err := json.Unmarshal(src, &v)
	var syn *json.SyntaxError
	switch {
	case err == nil:
		return true
	case errors.As(err, &syn):
		before := src[:min(int(syn.Offset), len(src))]
		line := 1 + bytes.Count(before, []byte("\n"))
		col := max(len(before)-bytes.LastIndexByte(before, '\n')-1, 1) // Offset is past the bad byte
		d.errs = append(d.errs, &ParseError{File: d.file, Pos: Pos{Line: line, Col: col}, Msg: "invalid JSON: " + syn.Error()})
	default:
		d.errorf(nil, "invalid JSON: %v", err)
	}
	return false
}

// Top-level keys by mode.
var (
	commonKeys   = []string{"name", "mode", "env", "secrets", "env_files", "profiles", "agent", "description"}
	standardKeys = append(commonKeys[:len(commonKeys):len(commonKeys)], "commands", "steps", "merge", "merge_back", "isolation")
	mapKeys      = append(append(commonKeys[:len(commonKeys):len(commonKeys)], "setup", "map", "reduce", "error_policy", "merge", "merge_back", "distributed", "budget"), errorPolicyKeys...)
)

// workflow decodes the top level: a bare list of steps, or a mapping.
func (d *decoder) workflow(root *yaml.Node) *Workflow {
	wf := &Workflow{File: d.file, Mode: Standard, ErrorPolicy: errorpolicy.Default()}
	wf.Name = strings.TrimSuffix(filepath.Base(d.file), filepath.Ext(d.file))
	if root = d.resolve(root); root == nil {
		return wf
	}
	if root.Kind == yaml.SequenceNode {
		wf.Steps = d.stepList(root, "commands", true)
		return wf
	}
	if root.Kind != yaml.MappingNode {
		d.errorf(root, "a workflow is a list of steps or a mapping (name, env, commands; or mode: mapreduce with setup, map, reduce), not %s", describe(root))
		return wf
	}
	mode, ok := d.mode(root)
	if !ok {
		// Every other message would follow from the mode misread.
		return wf
	}
	wf.Mode = mode
	if mode == Standard && compose.Uses(root) {
		composed := d.compose(root, wf)
		if composed == nil {
			// The file's own steps are still read, for their problems.
			composed = withoutKeys(root, compose.Keys)
		}
		root = composed
	}
	var known []string
	if mode == Standard {
		// MapReduce keys are reported by standardOnly, with the fix.
		known = append(d.standardOnly(root), standardKeys...)
	} else {
		known = append(d.standardIsolation(root), mapKeys...)
	}
	f := d.mapping(root, "the workflow", known)
	if f == nil {
		return wf
	}
	if n := f.get("name"); n != nil {
		wf.Name, _ = d.str(n, "name")
	}
	wf.Description = d.description(f, "description")
	d.environment(f, wf)
	if n := f.get("agent"); n != nil {
		wf.Agent = d.agent(n)
	}
	if mode == MapReduce {
		d.mapReduce(f, wf)
		d.mergeEnd(f, wf)
		if n := f.get("distributed"); n != nil {
			wf.Distributed = d.distributed(n)
		}
		if n := f.get("budget"); n != nil {
			wf.Budget = d.budget(n)
		}
		return wf
	}
	if n := d.oneOf(f, "commands", "steps"); n != nil { // steps: is the spelling of some of Prodigy's examples
		wf.Steps = d.stepList(n, "commands", false) // commands: [] runs nothing, as in Prodigy's templates
	} else {
		d.missing(f, root, "a standard workflow needs commands: a list of steps (or set mode: mapreduce)")
	}
	d.mergeEnd(f, wf)
	d.isolation(f, wf)
	return wf
}

// mode reads the mode key of a top-level mapping; ok is false after a
// bad value.
func (d *decoder) mode(root *yaml.Node) (mode Mode, ok bool) {
	for i := 0; i+1 < len(root.Content); i += 2 {
		if root.Content[i].Value != "mode" {
			continue
		}
		m, ok := d.enum(root.Content[i+1], "mode", string(Standard), string(MapReduce))
		return Mode(m), ok
	}
	return Standard, true
}

// standardOnly reports MapReduce keys in a file without mode: mapreduce
// and returns them.
func (d *decoder) standardOnly(root *yaml.Node) []string {
	var found []string
	for i := 0; i+1 < len(root.Content); i += 2 {
		switch k := root.Content[i]; k.Value {
		case "map", "setup", "reduce", "error_policy", "budget":
			d.errorf(k, "%q belongs to MapReduce workflows: add mode: mapreduce", k.Value)
			found = append(found, k.Value)
		}
	}
	return found
}

// standardIsolation reports the top-level isolation key, a standard
// workflow's, in a MapReduce file and returns it.
func (d *decoder) standardIsolation(root *yaml.Node) []string {
	for i := 0; i+1 < len(root.Content); i += 2 {
		if k := root.Content[i]; k.Value == "isolation" {
			d.errorf(k, "a MapReduce workflow's items run where map.isolation says: move isolation under map:")
			return []string{k.Value}
		}
	}
	return nil
}

// envVars reads a mapping of variable names to (templated) values.
func (d *decoder) envVars(n *yaml.Node, what string) []EnvVar {
	var out []EnvVar
	for _, e := range d.envEntries(n, what) {
		if t := d.envValue(e.val, what+"."+e.key.Value); t != nil {
			out = append(out, EnvVar{Name: e.key.Value, Value: t, Pos: pos(e.key)})
		}
	}
	return out
}

// envEntries returns the entries of a mapping of variable names, reporting
// the names that are not valid variable names.
func (d *decoder) envEntries(n *yaml.Node, what string) []entry {
	if n == nil {
		return nil
	}
	m := d.mappingNode(n, what, "a mapping of NAME: value")
	if m == nil {
		return nil
	}
	es, _ := d.entries(m, what)
	return slices.DeleteFunc(es, func(e entry) bool {
		if envName().MatchString(e.key.Value) {
			return false
		}
		d.errorf(e.key, "%s: %s is not a valid variable name (letters, digits and _, not starting with a digit)", what, describe(e.key))
		return true
	})
}

// envValue reads one variable's value (what names it): a string, number
// or boolean, null for "", that may hold placeholders (Prodigy's
// ${env:NAME} is ${env.NAME}); nil after an error.
func (d *decoder) envValue(n *yaml.Node, what string) *interp.Template {
	v := d.resolve(n)
	switch {
	case v == nil:
		return nil
	case isNull(v):
		return d.template(v, what, "")
	case v.Kind != yaml.ScalarNode:
		d.errorf(v, "%s must be a string, number or boolean, not %s", what, describe(v))
		return nil
	}
	return d.template(v, what, envColon().ReplaceAllString(v.Value, "$${env.$1}"))
}

var distributedKeys = []string{"queue", "max_deliveries", "replicas"}

// queueName is what a NATS subject token allows.
var queueName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9_-]{1,32}$`) })

// MaxReplicas is the most replicas a NATS JetStream stream may have.
const MaxReplicas = 5

// distributed reads distributed: {queue, max_deliveries, replicas}.
func (d *decoder) distributed(n *yaml.Node) *Distributed {
	f := d.mapping(n, "distributed", distributedKeys)
	if f == nil {
		return nil
	}
	dist := &Distributed{}
	if q := f.get("queue"); q != nil {
		if name, ok := d.str(q, "distributed.queue"); ok && !queueName().MatchString(name) {
			d.errorf(q, "distributed.queue %q: use 1 to 32 letters, digits, '_' or '-'", name)
		} else {
			dist.Queue = name
		}
	}
	if m := f.get("max_deliveries"); m != nil {
		dist.MaxDeliveries, _ = d.integer(m, "distributed.max_deliveries", 1)
	}
	if r := f.get("replicas"); r != nil {
		if n, ok := d.integer(r, "distributed.replicas", 1); ok && n > MaxReplicas {
			d.errorf(r, "distributed.replicas must be at most %d, not %d", MaxReplicas, n)
		} else {
			dist.Replicas = n
		}
	}
	return dist
}

var agentKeys = []string{"command", "env"}

// agent reads the top-level agent key: {command: [WORD, ...], env: {...}}.
func (d *decoder) agent(n *yaml.Node) *Agent {
	f := d.mapping(n, "agent", agentKeys)
	if f == nil {
		return nil
	}
	a := &Agent{Env: d.envVars(f.get("env"), "agent.env")}
	c := f.get("command")
	if c == nil {
		return a
	}
	if r := d.resolve(c); r != nil && r.Kind == yaml.ScalarNode {
		d.errorf(r, "agent.command must be a list of words, such as [claude, --print], not %s: runner runs it without a shell", describe(r))
		return a
	}
	words, ok := d.list(c, "agent.command")
	if ok && len(words) == 0 {
		d.errorf(c, "agent.command is empty: give the program and its arguments, such as [claude, --print]")
	}
	for i, w := range words {
		word, ok := d.str(w, fmt.Sprintf("agent.command[%d]", i))
		if ok && i == 0 && strings.TrimSpace(word) == "" {
			d.errorf(w, "agent.command[0] is empty: it names the program to run")
		}
		a.Command = append(a.Command, word)
	}
	return a
}

var envName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`) })

// template parses a value that may hold placeholders.
func (d *decoder) template(n *yaml.Node, what, text string) *interp.Template {
	t, err := interp.Parse(text)
	var syn *interp.SyntaxError
	switch {
	case errors.As(err, &syn) && n.Value == text:
		d.errorAt(d.scalarPos(n, syn.Offset), "%s: %s", what, syn.Msg)
		return nil
	case err != nil:
		d.errorf(n, "%s: %v", what, err)
		return nil
	}
	d.noteRefs(n, what, t.Refs())
	d.noteNamespaceRefs(n, what, t.Refs())
	d.notePlainRefs(n, t)
	d.noteValidationRefs(n, what, t.Refs())
	for _, src := range t.AsWritten() {
		d.warnAt(d.scalarPos(n, max(strings.Index(n.Value, src), 0)), "%s: %s is left as written: neither runner nor Prodigy has a filter that takes an argument (runner's are |raw and |json)", what, src)
	}
	return t
}
