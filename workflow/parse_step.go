package workflow

import (
	"cmp"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/runnerdev/runner/internal/breaker"
	"github.com/runnerdev/runner/retryv2"
	"github.com/runnerdev/runner/workflow/interp"
)

var stepKeys = []string{
	"shell", "claude", "name", "id", "timeout", "env", "working_dir",
	"capture_output", "capture", "capture_format", "capture_streams", "outputs", "when",
	"retry_config", "retry", "retryable", "circuit_breaker", "repeat", "on_failure",
	"commit_required", "auto_commit", "commit_message", "on_success", "on_exit_code",
	"write_file", "description", "options", "args", "metadata", "test",
	"validate", "clear_env", "temporary", "foreach", "output_file", "allow_failure", "fail_workflow", "output",
}

var (
	stepID      = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_-]*$`) })
	captureName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`) })
)

// stepList reads a list of steps; phases whose steps are required must have
// at least one.
func (d *decoder) stepList(n *yaml.Node, what string, required bool) []*Step {
	items, ok := d.list(n, what)
	if !ok {
		return nil
	}
	if len(items) == 0 && required {
		d.errorf(n, "%s is empty: nothing to run", what)
	}
	steps := make([]*Step, 0, len(items))
	outer := d.at
	phase := strings.TrimSuffix(what, ".commands")
	index := 0 // the steps of a parallel: block are the phase's, numbered on
	for i, it := range items {
		d.at = stepAt{phase: phase, index: index, outer: d.doOf}
		at := fmt.Sprintf("%s[%d]", what, i)
		if k := d.parallelKey(it); k != nil && d.noParallel(phase) == "" {
			n := 1
			d.inOrigin(it, func() {
				var block []*Step
				block, n = d.parallelSteps(it, at, phase, index)
				steps = append(steps, block...)
			})
			index += n
			continue
		}
		d.inOrigin(it, func() {
			if s := d.step(it, at, index); s != nil {
				steps = append(steps, s)
			}
		})
		index++
	}
	d.at = outer
	return steps
}

// newStep is a step at n's position with the defaults of every step.
func newStep(n *yaml.Node, index int) *Step {
	return &Step{Pos: pos(n), Index: index, Retryable: true, CaptureFormat: CaptureString, CaptureStreams: StreamStdout, texts: stepTexts(n)}
}

// step reads one step; nil for an analyze: step, which is left out.
func (d *decoder) step(n *yaml.Node, what string, index int) *Step {
	if d.analyzeStep(n) {
		return nil
	}
	if k := d.parallelKey(n); k != nil {
		why := d.noParallel(d.at.phase)
		if why == "" {
			why = "parallel: is allowed only among the steps of commands, setup, reduce and merge"
		}
		d.errorf(k, "%s", why)
		return nil
	}
	if r := d.resolve(n); r != nil && r.Kind == yaml.ScalarNode && r.ShortTag() == "!!str" {
		return d.bareStep(r, index)
	}
	f := d.mapping(n, "step "+what, stepKeys)
	if f == nil {
		return nil
	}
	s := newStep(f.node, index)
	onFailure := f.get("on_failure")
	switch {
	case d.foreachStep(f, what, s):
	case f.has("test"):
		s.Command, onFailure = d.testStep(f)
		s.Capture = testOutputVar
	default:
		s.Command = d.stepCommand(f, what)
	}
	if n := f.get("name"); n != nil {
		s.Name, _ = d.str(n, "name")
	}
	if desc := d.description(f, "description"); s.Name == "" {
		s.Name = desc // Prodigy's label of a step: shown where a name is
	}
	if n := f.get("id"); n != nil {
		s.ID = d.stepID(n)
	}
	if n := f.get("timeout"); n != nil {
		if s.TimeoutVar = d.varDuration(n, what+".timeout"); s.TimeoutVar == nil {
			s.Timeout, _ = d.positive(n, "timeout")
		}
	}
	s.Env = d.envVars(f.get("env"), "env")
	d.stepEnvFlags(f, s)
	if n := f.get("working_dir"); n != nil {
		if text, ok := d.str(n, "working_dir"); ok {
			s.WorkingDir = d.template(n, "working_dir", text)
		}
	}
	d.capture(f, s)
	s.Outputs = d.stepOutputs(f, s)
	if n := f.get("when"); n != nil {
		s.When = d.condition(n, "when")
	}
	retryNode := d.oneOf(f, "retry_config", "retry")
	var retryFailure *Failure
	if retryNode != nil {
		s.Retry, retryFailure = d.retryConfig(retryNode)
	}
	if n := f.get("retryable"); n != nil {
		s.Retryable, _ = d.boolean(n, "retryable")
	}
	if n := f.get("circuit_breaker"); n != nil {
		s.Breaker = d.stepBreaker(n)
	}
	if n := f.get("repeat"); n != nil {
		s.Repeat = d.repeat(n)
	}
	s.OnFailure = Failure{Action: FailStop}
	switch n := onFailure; {
	case n != nil && retryFailure != nil:
		d.errorf(f.key("on_failure"), "a step may use retry_config.on_failure or on_failure, not both")
	case n != nil:
		outer := d.at
		d.at.ran = true // the handler reads the failed run's ${ID.*}
		s.OnFailure = d.stepOnFailure(n, s.Command.Kind == ShellCommand)
		d.at = outer
	case retryFailure != nil:
		s.OnFailure = *retryFailure
	}
	d.commitFields(f, s)
	if n := f.get("validate"); n != nil {
		s.Validate = d.validate(n)
	}
	d.handlers(f, s, what)
	d.legacyFields(f, s, onFailure != nil || retryFailure != nil)
	d.outputFile(f, s)
	return s
}

// stepCommand reads the step's one command: shell or claude. A step with
// neither but with a name is Prodigy's legacy form of a Claude command.
func (d *decoder) stepCommand(f *fields, what string) Command {
	sh, cl := f.get("shell"), f.get("claude")
	switch {
	case f.has("write_file"):
		return d.writeFile(f)
	case sh != nil && cl != nil:
		d.errorf(f.key("claude"), "a step runs one command: shell or claude, not both")
	case sh != nil:
		if text, ok := d.str(sh, "shell"); ok {
			return d.command(sh, "shell", text, ShellCommand)
		}
	case cl != nil:
		if text, ok := d.str(cl, "claude"); ok {
			if strings.TrimSpace(text) == "" {
				d.errorf(cl, "claude: empty text: write the command for the agent, e.g. claude: \"/fix ${item.path}\"")
			}
			return Command{Kind: ClaudeCommand, Text: d.template(cl, "claude", text)}
		}
	case slices.ContainsFunc(f.node.Content, func(k *yaml.Node) bool { _, ok := unsupported[k.Value]; return ok }):
		// The unsupported key has its own message.
	case nameOnly(f):
		return d.namedCommand(f)
	default:
		d.missing(f, f.node, "step %s has no command: give it shell or claude", what)
	}
	return Command{Kind: ShellCommand}
}

// commitFields reads commit_required, auto_commit and commit_message.
func (d *decoder) commitFields(f *fields, s *Step) {
	if n := f.get("commit_required"); n != nil {
		s.CommitRequired, _ = d.boolean(n, "commit_required")
	}
	if n := f.get("auto_commit"); n != nil {
		s.AutoCommit, _ = d.boolean(n, "auto_commit")
	}
	if n := f.get("commit_message"); n != nil {
		text, ok := d.str(n, "commit_message")
		switch {
		case !ok:
		case !s.AutoCommit:
			d.errorf(f.key("commit_message"), "commit_message is the message of runner's auto_commit: set auto_commit: true, or leave it out")
		case strings.TrimSpace(text) == "":
			d.errorf(n, "commit_message is empty")
		default:
			s.CommitMessage = d.template(n, "commit_message", text)
		}
	}
}

// stepID reads an id, which must be unique in the file.
func (d *decoder) stepID(n *yaml.Node) string {
	id, ok := d.str(n, "id")
	if !ok {
		return ""
	}
	if !stepID().MatchString(id) {
		d.errorf(n, "id %q must start with a letter or _ and hold only letters, digits, _ and -", id)
		return ""
	}
	if prev, dup := d.ids[id]; dup {
		d.errorf(n, "id %q is already used by the step at line %d", id, prev.Line)
		return ""
	}
	d.ids[id], d.stepsAt[id] = n, d.at
	return id
}

// capture reads capture_output (or Prodigy's capture), capture_format and
// capture_streams.
func (d *decoder) capture(f *fields, s *Step) {
	if n := d.oneOf(f, "capture_output", "capture"); n != nil {
		key := "capture_output"
		if !f.has(key) {
			key = "capture"
		}
		defaultName := string(cmp.Or(s.Command.Kind, ShellCommand)) + ".output"
		switch r := d.resolve(n); {
		case r == nil:
		case r.Kind == yaml.ScalarNode && r.ShortTag() == "!!bool":
			if on, _ := d.boolean(r, key); on {
				s.Capture = defaultName
			}
		default:
			name, ok := d.str(r, key)
			switch {
			case !ok:
			case name == defaultName:
				s.Capture = defaultName // Prodigy's spelling of capture_output: true
			case !captureName().MatchString(name):
				d.errorf(r, "%s: %q is not a valid variable name (letters, digits and _)", key, name)
			case slices.Contains(interp.Namespaces, name) || name == "env":
				d.errorf(r, "%s: %q is reserved for runner's own variables; choose another name", key, name)
			default:
				s.Capture = name
			}
		}
	}
	if n := f.get("capture_format"); n != nil {
		v, _ := d.enum(n, "capture_format", string(CaptureString), string(CaptureJSON), string(CaptureLines), string(CaptureNumber), string(CaptureBoolean))
		s.CaptureFormat = CaptureFormat(v)
	}
	if n := f.get("capture_streams"); n != nil {
		s.CaptureStreams = d.captureStreams(n)
	}
	d.short.noteCapture(s, d.at)
	if s.Capture == "" && !f.has("capture_output") && !f.has("capture") {
		for _, k := range []string{"capture_format", "capture_streams"} {
			if f.has(k) {
				d.missing(f, f.key(k), "%s needs capture_output or capture (true, or a variable name)", k)
			}
		}
	}
}

var breakerKeys = []string{"failure_threshold", "success_threshold", "timeout", "half_open_requests"}

// breakerFields reads a circuit_breaker mapping over the given defaults.
func (d *decoder) breakerFields(n *yaml.Node, what string, c breaker.Config) breaker.Config {
	f := d.mapping(n, what, breakerKeys)
	if f == nil {
		return c
	}
	if v := f.get("failure_threshold"); v != nil {
		c.FailureThreshold, _ = d.integer(v, what+".failure_threshold", 1)
	}
	if v := f.get("success_threshold"); v != nil {
		c.SuccessThreshold, _ = d.integer(v, what+".success_threshold", 1)
	}
	if v := f.get("timeout"); v != nil {
		c.Timeout, _ = d.positive(v, what+".timeout")
	}
	if v := f.get("half_open_requests"); v != nil {
		c.HalfOpenRequests, _ = d.integer(v, what+".half_open_requests", 1)
	}
	return c
}

// stepBreaker reads a step's circuit_breaker.
func (d *decoder) stepBreaker(n *yaml.Node) *breaker.Config {
	c := d.breakerFields(n, "circuit_breaker", breaker.Config{
		FailureThreshold: 5, SuccessThreshold: 1, Timeout: 30 * time.Second, HalfOpenRequests: 1,
	})
	return &c
}

var repeatKeys = []string{"until", "interval", "backoff", "max_attempts", "timeout"}

// defaultPollInterval is repeat's interval when the file gives none.
const defaultPollInterval = 5 * time.Second

// repeat reads a repeat block.
func (d *decoder) repeat(n *yaml.Node) *Repeat {
	f := d.mapping(n, "repeat", repeatKeys)
	if f == nil {
		return nil
	}
	r := &Repeat{Interval: defaultPollInterval, Backoff: retryv2.Backoff{Strategy: retryv2.Fixed}}
	if u := f.get("until"); u != nil {
		r.Until = d.condition(u, "repeat.until")
	} else {
		d.missing(f, f.node, "repeat needs until: the condition that ends the polling")
	}
	if v := f.get("interval"); v != nil {
		r.Interval, _ = d.duration(v, "repeat.interval")
	}
	if v := f.get("backoff"); v != nil {
		r.Backoff = d.backoff(v, "repeat.backoff")
	}
	if v := f.get("max_attempts"); v != nil {
		r.MaxAttempts, _ = d.integer(v, "repeat.max_attempts", 1)
	}
	if v := f.get("timeout"); v != nil {
		r.Timeout, _ = d.positive(v, "repeat.timeout")
	}
	if !f.has("max_attempts") && !f.has("timeout") {
		d.missing(f, f.node, "repeat needs max_attempts or timeout, so that polling ends")
	}
	return r
}

// warnWordHandler warns of an on_failure command that is a word people
// write meaning "go on" or "stop": Prodigy's string form is a command, so
// `on_failure: continue` runs the shell builtin continue (which exits 0).
func (d *decoder) warnWordHandler(r *yaml.Node) {
	if r.Kind != yaml.ScalarNode {
		return
	}
	switch w := strings.TrimSpace(r.Value); w {
	case "continue", "skip", "ignore":
		d.warnf(r, "on_failure: %s runs the shell command %q; to go on after a failure write on_failure: true", w, w)
	case "stop", "fail", "abort":
		d.warnf(r, "on_failure: %s runs the shell command %q; to stop at a failure leave on_failure out (or write on_failure: false)", w, w)
	}
}

var onFailureKeys = []string{"shell", "claude", "commands", "fail_workflow", "max_attempts", "max_retries", "commit_required", "on_success"}

// stepOnFailure reads the Prodigy step-level on_failure: true, false, a
// command, a list of commands, or {shell | claude | commands, fail_workflow,
// max_attempts, commit_required, on_success}. shellStep says the step
// runs a shell command.
func (d *decoder) stepOnFailure(n *yaml.Node, shellStep bool) Failure {
	r := d.resolve(n)
	switch {
	case r == nil:
		return Failure{Action: FailStop}
	case r.Kind == yaml.ScalarNode && r.ShortTag() == "!!bool":
		if cont, _ := d.boolean(r, "on_failure"); cont {
			return Failure{Action: FailContinue}
		}
		return Failure{Action: FailStop}
	case r.Kind == yaml.ScalarNode, r.Kind == yaml.SequenceNode:
		d.warnWordHandler(r)
		return Failure{Action: FailHandler, Commands: d.commands(r, "on_failure", ShellCommand)}
	}
	f := d.mapping(r, "on_failure", onFailureKeys)
	if f == nil {
		return Failure{Action: FailStop}
	}
	fl := Failure{Action: FailHandler}
	var given []string
	for _, k := range []string{"shell", "claude", "commands"} {
		if f.get(k) != nil {
			given = append(given, k)
		}
	}
	switch {
	case len(given) > 1:
		d.errorf(f.key(given[1]), "on_failure takes one of shell, claude or commands, not %s and %s", given[0], given[1])
	case len(given) == 0:
		d.missing(f, f.node, "on_failure needs shell, claude or commands")
	case given[0] == "commands":
		fl.Commands = d.commands(f.get("commands"), "on_failure.commands", ShellCommand)
	default:
		fl.Commands = d.commands(f.get(given[0]), "on_failure."+given[0], CommandKind(given[0]))
	}
	if v := f.get("fail_workflow"); v != nil {
		fl.FailWorkflow, _ = d.boolean(v, "on_failure.fail_workflow")
	}
	d.fixLoop(f, &fl)
	d.loopDefaults(f, &fl, shellStep)
	return fl
}

// defaultFixAttempts is max_attempts of an agent fix that does not set it
// (Prodigy's TestDebugConfig default).
const defaultFixAttempts = 3

// loopDefaults settles whether the handler of the on_failure mapping f
// loops. In reduce it runs once and the phase goes on if it succeeds
// (Prodigy's reduce), so max_attempts and fail_workflow: true are warned
// of and dropped. Elsewhere a shell step's claude: handler without
// max_attempts is a fix loop of defaultFixAttempts runs (Prodigy's agent
// fix); every other handler without it runs once.
func (d *decoder) loopDefaults(f *fields, fl *Failure, shellStep bool) {
	if d.inReduce {
		const once = "has no effect in reduce: there the handler runs once and the phase goes on if it succeeds (as in Prodigy's reduce)"
		for _, k := range []string{"max_attempts", "max_retries"} {
			if f.has(k) {
				d.warnf(f.key(k), "on_failure.%s %s", k, once)
			}
		}
		if fl.FailWorkflow {
			d.warnf(f.key("fail_workflow"), "on_failure.fail_workflow: true %s", once)
		}
		fl.MaxAttempts, fl.FailWorkflow = 0, false
		return
	}
	if shellStep && f.has("claude") && !f.has("max_attempts") && !f.has("max_retries") {
		fl.MaxAttempts = defaultFixAttempts
	}
}

// commands reads one command or a list of them, of the given kind; list
// entries may also be written {shell: CMD} or {claude: TEXT}.
func (d *decoder) commands(n *yaml.Node, what string, kind CommandKind) []Command {
	r := d.resolve(n)
	if r == nil {
		return nil
	}
	if r.Kind != yaml.SequenceNode {
		if text, ok := d.str(r, what); ok && strings.TrimSpace(text) != "" {
			return []Command{d.command(r, what, text, kind)}
		}
		d.errorf(r, "%s: empty command", what)
		return nil
	}
	if len(r.Content) == 0 {
		d.errorf(r, "%s: empty list of commands", what)
	}
	var out []Command
	for i, it := range r.Content {
		item, itemKind := fmt.Sprintf("%s[%d]", what, i), kind
		if m := d.resolve(it); m != nil && m.Kind == yaml.MappingNode {
			f := d.mapping(m, item, []string{"shell", "claude"})
			switch sh, cl := f.get("shell"), f.get("claude"); {
			case sh != nil && cl != nil:
				d.errorf(f.key("claude"), "%s runs one command: shell or claude, not both", item)
				continue
			case sh != nil:
				it, itemKind = sh, ShellCommand
			case cl != nil:
				it, itemKind = cl, ClaudeCommand
			default:
				d.missing(f, m, "%s needs shell or claude", item)
				continue
			}
		}
		if text, ok := d.str(it, item); ok {
			out = append(out, d.command(it, item, text, itemKind))
		}
	}
	return out
}
