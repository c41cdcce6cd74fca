package workflow

import (
	"maps"
	"slices"

	"gopkg.in/yaml.v3"

	"github.com/runnerdev/runner/workflow/interp"
)

// setupKeys are the keys of setup:'s mapping form (Prodigy's SetupPhase).
var setupKeys = []string{"commands", "timeout", "capture_outputs"}

// captureConfigKeys are the keys of a capture_outputs entry's mapping form
// (Prodigy's CaptureConfig) that runner reads.
var captureConfigKeys = []string{"command_index", "source"}

// unreadCaptureKeys are CaptureConfig keys runner does not carry out,
// with what to do instead.
var unreadCaptureKeys = map[string]string{
	"json_path": "capture the command's output with capture_format: json and read ${NAME.field}",
	"pattern":   "extract the text in the command itself (grep, sed)",
	"max_size":  "runner keeps the last 1 MiB of a capture",
	"default":   "write the default in the reading placeholder: ${NAME:-default}",
	"multiline": "shape the output in the command itself (head -n1, tail -n1, tr)",
}

// setupPhase reads setup: a list of steps, or Prodigy's {commands, timeout,
// capture_outputs}. timeout bounds the whole phase; capture_outputs names
// the output of a command by its index, as capture_output on that step
// would.
func (d *decoder) setupPhase(n *yaml.Node, wf *Workflow) []*Step {
	r := d.resolve(n)
	if r == nil || r.Kind != yaml.MappingNode {
		return d.phase(n, "setup", false)
	}
	f := d.mapping(r, "setup", setupKeys)
	if f == nil {
		return nil
	}
	var steps []*Step
	if c := f.get("commands"); c != nil {
		steps = d.stepList(c, "setup.commands", false)
	} else {
		d.errorf(r, "setup needs commands: a list of steps")
	}
	if t := f.get("timeout"); t != nil {
		if wf.SetupTimeoutVar = d.varDuration(t, "setup.timeout"); wf.SetupTimeoutVar == nil {
			wf.SetupTimeout, _ = d.positive(t, "setup.timeout")
		}
	}
	if c := f.get("capture_outputs"); c != nil {
		d.captureOutputs(c, steps)
	}
	return steps
}

// captureOutputs reads capture_outputs: {NAME: INDEX} or {NAME:
// {command_index, source}}, and sets the capture of those steps.
func (d *decoder) captureOutputs(n *yaml.Node, steps []*Step) {
	m := d.mappingNode(n, "setup.capture_outputs", "a mapping of NAME: command index")
	if m == nil {
		return
	}
	es, _ := d.entries(m, "setup.capture_outputs")
	for _, e := range es {
		name, what := e.key.Value, "setup.capture_outputs."+e.key.Value
		index, streams, ok := d.captureConfig(e.val, what)
		switch {
		case !ok:
		case !captureName().MatchString(name):
			d.errorf(e.key, "%s: %q is not a valid variable name (letters, digits and _)", what, name)
		case slices.Contains(interp.Namespaces, name) || name == "env":
			d.errorf(e.key, "%s: %q is reserved for runner's own variables; choose another name", what, name)
		case index >= len(steps):
			d.errorf(e.val, "%s: setup has %d commands, so there is no command %d (indexes start at 0)", what, len(steps), index)
		case steps[index].Capture != "":
			d.errorf(e.val, "%s: command %d already captures its output as %s", what, index, steps[index].Capture)
		default:
			steps[index].Capture, steps[index].CaptureStreams = name, streams
		}
	}
}

// captureConfig reads one capture_outputs entry: an index, or {command_index,
// source}.
func (d *decoder) captureConfig(n *yaml.Node, what string) (int, CaptureStreams, bool) {
	r := d.resolve(n)
	if r == nil || r.Kind != yaml.MappingNode {
		i, ok := d.integer(n, what, 0)
		return i, StreamStdout, ok
	}
	f := d.mapping(r, what, append(slices.Sorted(maps.Keys(unreadCaptureKeys)), captureConfigKeys...))
	if f == nil {
		return 0, "", false
	}
	unread := false
	for _, k := range slices.Sorted(maps.Keys(unreadCaptureKeys)) {
		if f.has(k) {
			d.errorf(f.key(k), "%s.%s (Prodigy's capture extraction) is not supported: %s", what, k, unreadCaptureKeys[k])
			unread = true
		}
	}
	ci := f.get("command_index")
	if ci == nil {
		d.errorf(r, "%s needs command_index: the 0-based index of the setup command", what)
		return 0, "", false
	}
	index, ok := d.integer(ci, what+".command_index", 0)
	streams := StreamStdout
	if s := f.get("source"); s != nil {
		// combined (the two streams interleaved) is runner's both.
		v, _ := d.enum(s, what+".source", "stdout", "stderr", "both", "combined")
		streams = map[string]CaptureStreams{"stdout": StreamStdout, "stderr": StreamStderr, "both": StreamBoth, "combined": StreamBoth}[v]
	}
	return index, streams, ok && streams != "" && !unread
}
