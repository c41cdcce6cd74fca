package workflow

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"gopkg.in/yaml.v3"

	"github.com/runnerdev/runner/errorpolicy"
	"github.com/runnerdev/runner/retryv2"
)

// description reads a step's or the workflow's description: a label for
// people, which runs nothing.
func (d *decoder) description(f *fields, what string) string {
	n := f.get("description")
	if n == nil {
		return ""
	}
	text, _ := d.str(n, what)
	return strings.TrimSpace(text)
}

// batchedForm is Prodigy's short spelling of a batched error_collection:
// batched:N.
var batchedForm = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^batched\s*:\s*(\S*)$`) })

// batchedShorthand reads the short spellings of {batched: {size: N}}:
// "batched:N" and {batched: N}; ok is false for any other form.
func (d *decoder) batchedShorthand(r *yaml.Node) (c errorpolicy.Collection, ok bool) {
	c = errorpolicy.Collection{Mode: "aggregate"}
	switch {
	case r == nil:
		return c, false
	case r.Kind == yaml.ScalarNode:
		m := batchedForm().FindStringSubmatch(r.Value)
		if m == nil {
			return c, false
		}
		if n, err := strconv.Atoi(m[1]); err == nil && n >= 1 {
			return errorpolicy.Collection{Mode: "batched", BatchSize: n}, true
		}
		d.errorf(r, "error_collection: %q needs a batch size of at least 1, such as batched:10", r.Value)
		return c, true
	case r.Kind == yaml.MappingNode && len(r.Content) == 2 && r.Content[0].Value == "batched":
		size := d.resolve(r.Content[1])
		if size == nil || size.Kind != yaml.ScalarNode || isNull(size) {
			return c, false
		}
		if n, ok := d.integer(size, "error_collection.batched", 1); ok {
			c = errorpolicy.Collection{Mode: "batched", BatchSize: n}
		}
		return c, true
	}
	return c, false
}

// metadataKeys are the keys of Prodigy's legacy metadata: block
// (CommandMetadata), each the old spelling of a step key.
var metadataKeys = []string{"continue_on_error", "timeout", "retries", "env", "commit_required"}

// legacyFields reads Prodigy's legacy structured-command fields: options
// and args, which must repeat what the claude text already says (runner
// runs the text as written, and adds nothing to it), metadata, whose keys
// are the old spellings of step keys, allow_failure and fail_workflow, old
// spellings of on_failure: continue, and output, the file the step writes.
// onFailure tells whether the step also gives on_failure or
// retry_config.on_failure.
func (d *decoder) legacyFields(f *fields, s *Step, onFailure bool) {
	d.continueOnFailure(f, s, onFailure)
	if n := f.get("output"); n != nil {
		switch text, ok := d.str(n, "output"); {
		case ok && strings.TrimSpace(text) == "":
			d.errorf(n, "output: needs the path of the file the step writes")
		case ok:
			s.Output = d.template(n, "output", text)
		}
	}
	switch {
	case nameOnly(f) && f.get("options") != nil:
		// build_command_string (execution_pipeline.rs) makes the command
		// of a structured step from its name and args only.
		d.warnf(f.key("options"), "options of a step with only a name have no effect; Prodigy ignores them too (its command is /NAME and the args)")
	case f.get("options") != nil:
		d.legacyOptions(f.get("options"), f, s)
	}
	if n := f.get("args"); n != nil && !nameOnly(f) {
		d.legacyArgs(n, f, s)
	}
	if n := f.get("metadata"); n != nil {
		d.metadata(n, f, s, onFailure)
	}
}

// continueKeys are Prodigy's step-level spellings of on_failure:
// continue, each with the value that means it: allow_failure: true and
// fail_workflow: false.
var continueKeys = []struct {
	key   string
	value bool
}{{"allow_failure", true}, {"fail_workflow", false}}

// continueOnFailure reads the step-level spellings of on_failure: continue
// (the step's failure is recorded and the workflow goes on); their other
// value changes nothing.
func (d *decoder) continueOnFailure(f *fields, s *Step, onFailure bool) {
	for _, c := range continueKeys {
		n := f.get(c.key)
		if n == nil {
			continue
		}
		v, ok := d.boolean(n, c.key)
		switch {
		case !ok || v != c.value:
		case onFailure || s.OnFailure.Action != FailStop:
			d.errorf(f.key(c.key), "%s: %t is Prodigy's spelling of on_failure: continue, and this step also sets on_failure; keep one", c.key, v)
		default:
			s.OnFailure = Failure{Action: FailContinue}
		}
	}
}

// claudeWords returns the words of a claude step's text, quotes removed,
// or reports that key belongs to a claude: step (a step without a command
// has its own error).
func (d *decoder) claudeWords(f *fields, s *Step, key string) ([]string, bool) {
	if s.Command.Text == nil {
		return nil, false
	}
	if s.Command.Kind != ClaudeCommand {
		d.errorf(f.key(key), "%s belongs to a claude: step (Prodigy's legacy Claude command): it lists the command's own flags and arguments", key)
		return nil, false
	}
	words := strings.Fields(s.Command.Text.String())
	for i, w := range words {
		words[i] = strings.Trim(w, `'"`)
	}
	return words, true
}

// legacyOptions checks options: {NAME: VALUE}: each must be in the claude
// text as --NAME VALUE or --NAME=VALUE; true as a bare --NAME, false as its
// absence.
func (d *decoder) legacyOptions(n *yaml.Node, f *fields, s *Step) {
	m := d.mappingNode(n, "options", "a mapping of NAME: value")
	if m == nil {
		return
	}
	words, ok := d.claudeWords(f, s, "options")
	if !ok {
		return
	}
	es, _ := d.entries(m, "options")
	for _, e := range es {
		name, v := e.key.Value, d.scalar(e.val, "options."+e.key.Value, "a string, number or boolean")
		if v == nil {
			continue
		}
		flag := "--" + name
		var says bool
		switch {
		case v.ShortTag() == "!!bool" && v.Value == "false":
			says = !slices.Contains(words, flag)
		case v.ShortTag() == "!!bool":
			says = slices.Contains(words, flag)
		default:
			i := slices.Index(words, flag)
			says = i >= 0 && i+1 < len(words) && words[i+1] == v.Value || slices.Contains(words, flag+"="+v.Value)
		}
		if !says {
			d.errorf(e.key, "options.%s: runner runs the claude text as written and adds no flags to it; write %s in the text (Prodigy's legacy options repeat the text's flags)", name, optionText(flag, v))
		}
	}
}

// optionText is how an option is written in a command's text.
func optionText(flag string, v *yaml.Node) string {
	switch {
	case v.ShortTag() == "!!bool" && v.Value == "false":
		return "no " + flag
	case v.ShortTag() == "!!bool":
		return flag
	}
	return flag + " " + v.Value
}

// legacyArgs checks args: [ARG...]: each must be a word of the claude text.
func (d *decoder) legacyArgs(n *yaml.Node, f *fields, s *Step) {
	items, ok := d.list(n, "args")
	if !ok {
		return
	}
	words, ok := d.claudeWords(f, s, "args")
	if !ok {
		return
	}
	for i, it := range items {
		arg, ok := d.str(it, fmt.Sprintf("args[%d]", i))
		if ok && !slices.Contains(words, arg) {
			d.errorf(it, "args[%d]: runner runs the claude text as written and adds no arguments to it; write %s in the text (Prodigy's legacy args repeat the text's arguments)", i, arg)
		}
	}
}

// metadata reads Prodigy's legacy metadata: block, each key standing for
// the step key of today's format: continue_on_error: true is on_failure:
// continue, retries: N is retry_config: {attempts: N+1}, timeout, env and
// commit_required are themselves.
func (d *decoder) metadata(n *yaml.Node, f *fields, s *Step, onFailure bool) {
	m := d.mapping(n, "metadata", metadataKeys)
	if m == nil {
		return
	}
	// skip reports whether metadata has no key, or has it and the step
	// also gives its step key (an error).
	skip := func(key, stepKey string, given bool) bool {
		if m.has(key) && given {
			d.errorf(m.key(key), "metadata.%s is Prodigy's old spelling of %s, which this step also sets; keep one", key, stepKey)
			return true
		}
		return !m.has(key)
	}
	if v := m.get("continue_on_error"); !skip("continue_on_error", "on_failure", onFailure || s.OnFailure.Action != FailStop) {
		if cont, _ := d.boolean(v, "metadata.continue_on_error"); cont {
			s.OnFailure = Failure{Action: FailContinue}
		}
	}
	if v := m.get("timeout"); !skip("timeout", "timeout", f.has("timeout")) {
		s.Timeout, _ = d.positive(v, "metadata.timeout")
	}
	if v := m.get("retries"); !skip("retries", "retry_config", len(s.Retry) > 0) {
		if retries, ok := d.integer(v, "metadata.retries", 0); ok && retries > 0 {
			p := retryv2.DefaultPolicy()
			p.Attempts = retries + 1
			s.Retry = []retryv2.Policy{p}
		}
	}
	if v := m.get("env"); !skip("env", "env", f.has("env")) {
		s.Env = d.envVars(v, "metadata.env")
	}
	if v := m.get("commit_required"); !skip("commit_required", "commit_required", f.has("commit_required")) {
		s.CommitRequired, _ = d.boolean(v, "metadata.commit_required")
	}
}
