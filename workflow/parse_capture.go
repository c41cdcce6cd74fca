package workflow

import (
	"path"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"
)

// captureStreamKeys are the keys of Prodigy's mapping form of
// capture_streams. runner always records exit_code, success and duration
// (${NAME.exit_code}, ...), so those three are accepted and change nothing.
var captureStreamKeys = []string{"stdout", "stderr", "exit_code", "success", "duration"}

// captureStreams reads capture_streams: stdout, stderr or both, or
// Prodigy's mapping {stdout: BOOL, stderr: BOOL, ...} (stdout true and
// stderr false unless given).
func (d *decoder) captureStreams(n *yaml.Node) CaptureStreams {
	if r := d.resolve(n); r == nil || r.Kind != yaml.MappingNode {
		v, _ := d.enum(n, "capture_streams", string(StreamStdout), string(StreamStderr), string(StreamBoth))
		return CaptureStreams(v)
	}
	f := d.mapping(n, "capture_streams", captureStreamKeys)
	if f == nil {
		return StreamStdout
	}
	flags := map[string]bool{"stdout": true}
	for _, k := range captureStreamKeys {
		if v := f.get(k); v != nil {
			flags[k], _ = d.boolean(v, "capture_streams."+k)
		}
	}
	switch {
	case flags["stdout"] && flags["stderr"]:
		return StreamBoth
	case flags["stderr"]:
		return StreamStderr
	case flags["stdout"]:
		return StreamStdout
	}
	return StreamNone
}

// stepOutputs reads Prodigy's outputs: {NAME: {file_pattern: GLOB}}, files
// the step creates or changes, read as ${ID.NAME}; the step needs an id.
func (d *decoder) stepOutputs(f *fields, s *Step) []StepOutput {
	n := f.get("outputs")
	if n == nil {
		return nil
	}
	if !f.has("id") {
		d.errorf(f.key("outputs"), "outputs are read as ${ID.NAME}: give the step an id")
	}
	m := d.mappingNode(n, "outputs", "a mapping of names to {file_pattern: GLOB}")
	if m == nil {
		return nil
	}
	es, ok := d.entries(m, "outputs")
	if !ok {
		return nil
	}
	var outs []StepOutput
	for _, e := range es {
		name := e.key.Value
		switch {
		case !captureName().MatchString(name):
			d.errorf(e.key, "outputs: %q is not a valid name (letters, digits and _)", name)
			continue
		case slices.Contains(stepFields, name):
			d.errorf(e.key, "outputs: %q is one of the step's own fields (%s); choose another name", name, strings.Join(stepFields, ", "))
			continue
		}
		of := d.mapping(e.val, "outputs."+name, []string{"file_pattern"})
		if of == nil {
			continue
		}
		p := of.get("file_pattern")
		if p == nil {
			if of.unknown == 0 { // a misspelt key has its own error
				d.errorf(of.node, "outputs.%s needs file_pattern: the glob of the file the step creates", name)
			}
			continue
		}
		glob, ok := d.str(p, "outputs."+name+".file_pattern")
		if !ok {
			continue
		}
		if _, err := path.Match(glob, ""); err != nil || glob == "" {
			d.errorf(p, "outputs.%s.file_pattern: %q is not a valid glob", name, glob)
			continue
		}
		outs = append(outs, StepOutput{Name: name, Pattern: glob})
		d.short.noteOutput(s.ID, name)
	}
	return outs
}

// stepFields are the variables every step with an id defines:
// ${ID.output}, ${steps.ID.exit_code}, ...
var stepFields = []string{"output", "exit_code", "success", "commits"}
