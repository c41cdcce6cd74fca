package workflow

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/runnerdev/runner/workflow/interp"
)

// Prodigy reads a step's variables as ${ID.output} and a capture's
// metadata as ${NAME.exit_code}: paths that name no runner namespace. The
// decoder knows every id and capture name, so such a path whose name is
// neither is an error at validation, not a shell's "Bad substitution" when
// the step runs.

// captureFields are what ${NAME.field} reads of a capture besides its
// value (executor sets them with the value).
var captureFields = []string{"exit_code", "success", "duration", "stderr", "commits"}

// shortFields are the fields whose ${X.field} must name a step or a
// capture: a path runner cannot resolve otherwise.
var shortFields = []string{"output", "exit_code", "success", "duration", "stderr", "commits"}

// shortRoots are the first segments of runner's variables that are
// neither namespaces nor captures: ${env.NAME}, ${worktree.path}.
var shortRoots = []string{"env", "worktree"}

// captureAt is a step that captures a name.
type captureAt struct {
	at     stepAt
	format CaptureFormat
}

// shortNames are the names Prodigy's short paths may start with.
type shortNames struct {
	captures map[string][]captureAt // capture name -> the steps that set it
	outputs  map[string][]string    // step id -> its outputs' names
	tests    []stepAt               // Prodigy's test: steps, which set ${test.output}
}

// noteCapture records the name a step captures, if it is a name of its own.
func (s *shortNames) noteCapture(step *Step, at stepAt) {
	if step.Capture == testOutputVar {
		s.tests = append(s.tests, at)
	}
	if step.Capture == "" || strings.Contains(step.Capture, ".") {
		return
	}
	if s.captures == nil {
		s.captures = map[string][]captureAt{}
	}
	s.captures[step.Capture] = append(s.captures[step.Capture], captureAt{at: at, format: step.CaptureFormat})
}

// noteOutput records an output's name of the step id.
func (s *shortNames) noteOutput(id, name string) {
	if id == "" {
		return
	}
	if s.outputs == nil {
		s.outputs = map[string][]string{}
	}
	s.outputs[id] = append(s.outputs[id], name)
}

// shortPath splits ${X.field...} into X and field when X is no runner
// namespace: a step id or a capture name in Prodigy's spelling.
func shortPath(p string) (name, field string, ok bool) {
	name, rest, ok := strings.Cut(p, ".")
	if !ok || strings.Contains(name, "[") || slices.Contains(interp.Namespaces, name) || slices.Contains(shortRoots, name) {
		return "", "", false
	}
	if i := strings.IndexAny(rest, ".["); i >= 0 {
		rest = rest[:i]
	}
	return name, rest, true
}

// checkShortRef checks a ${X.field} read; it returns false when X is a step
// id, for checkRefs to check like ${steps.X.field}.
func (d *decoder) checkShortRef(r stepRef) bool {
	if caps, ok := d.short.captures[r.id]; ok {
		d.checkCaptureRef(r, caps)
		return true
	}
	if r.id+"."+r.field == testOutputVar && len(d.short.tests) > 0 {
		d.checkTestRef(r)
		return true
	}
	if _, ok := d.stepsAt[r.id]; ok {
		fields := append(slices.Clone(stepFields), d.short.outputs[r.id]...)
		if !slices.Contains(fields, r.field) {
			d.errorAt(r.pos, "%s: ${%s.%s}: step %s has no %s (it has %s)", r.what, r.id, r.field, r.id, r.field, strings.Join(fields, ", "))
			return true
		}
		return false
	}
	if !slices.Contains(shortFields, r.field) {
		return true // not a read runner could resolve: the shell's own ${X-word}, or another tool's text
	}
	msg := fmt.Sprintf("%s: ${%s.%s}: no step has id %q and no step captures %q", r.what, r.id, r.field, r.id, r.id)
	names := slices.Collect(maps.Keys(d.stepsAt))
	names = append(names, slices.Collect(maps.Keys(d.short.captures))...)
	if s := nearest(r.id, names); s != "" {
		msg += fmt.Sprintf(" (did you mean %q?)", s)
	}
	d.errorAt(r.pos, "%s", msg)
	return true
}

// checkCaptureRef checks ${NAME.field} of a capture: the capture must be
// set where it is read, and a field other than its metadata needs a JSON
// capture.
func (d *decoder) checkCaptureRef(r stepRef, caps []captureAt) {
	why := ""
	for _, c := range caps {
		if why = canRead(r.at, c.at); why == "" {
			break
		}
	}
	if why != "" {
		d.errorAt(r.pos, "%s: ${%s.%s}: the capture %s is not set here: %s", r.what, r.id, r.field, r.id, why)
		return
	}
	if slices.Contains(captureFields, r.field) || slices.ContainsFunc(caps, func(c captureAt) bool { return c.format == CaptureJSON }) {
		return
	}
	d.errorAt(r.pos, "%s: ${%s.%s}: the capture %s is a %s, with no field %s (a capture has %s; capture_format: json reads fields of the output)",
		r.what, r.id, r.field, r.id, caps[0].format, r.field, strings.Join(captureFields, ", "))
}

// checkTestRef checks a ${test.output} read: a test: step must have run
// where it is read.
func (d *decoder) checkTestRef(r stepRef) {
	why := ""
	for _, at := range d.short.tests {
		if why = canRead(r.at, at); why == "" {
			return
		}
	}
	d.errorAt(r.pos, "%s: ${%s}: no test: step has run here: %s", r.what, testOutputVar, why)
}
