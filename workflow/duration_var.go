package workflow

import (
	"fmt"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/runnerdev/runner/workflow/interp"
)

// VarDuration is a duration a file gives as a variable, $NAME or ${NAME}
// (Prodigy's `timeout: $SETUP_TIMEOUT`): resolved when the job starts, from
// the workflow env, --set and the environment.
type VarDuration struct {
	Ref string // as written
	Key string // what names it in errors, such as "setup.timeout"
	Pos Pos
}

// varDuration reads a duration value written as a variable, or returns nil
// for any other value (which the caller reads as a duration).
func (d *decoder) varDuration(n *yaml.Node, what string) *VarDuration {
	r := d.resolve(n)
	if r == nil || r.Kind != yaml.ScalarNode || r.ShortTag() != "!!str" || !varRef().MatchString(r.Value) {
		return nil
	}
	return &VarDuration{Ref: r.Value, Key: what, Pos: pos(r)}
}

// resolve reads the variable through lookup as a duration longer than
// zero.
func (v *VarDuration) resolve(lookup interp.Lookup) (time.Duration, error) {
	name := strings.Trim(strings.TrimPrefix(v.Ref, "$"), "{}")
	val, ok := lookup(name)
	if !ok {
		return 0, fmt.Errorf("%s is not set (give it in env, with --set %s=DURATION, or in the environment)", v.Ref, name)
	}
	text := fmt.Sprint(val)
	dur, err := ParseDuration(text)
	if err == nil && dur <= 0 {
		err = fmt.Errorf("%q is not longer than zero", text)
	}
	if err != nil {
		return 0, fmt.Errorf("%s is %q, not a duration: %w", v.Ref, text, err)
	}
	return dur, nil
}

// ResolveDurations sets the durations the file gives as variables (step
// timeouts, setup.timeout, map.agent_timeout) from lookup, when the job
// starts; the first one that is not set or not a duration is the error.
func (wf *Workflow) ResolveDurations(lookup interp.Lookup) error {
	set := func(v *VarDuration, to *time.Duration) error {
		if v == nil {
			return nil
		}
		d, err := v.resolve(lookup)
		if err != nil {
			return fmt.Errorf("%s:%d:%d: %s: %w", wf.File, v.Pos.Line, v.Pos.Col, v.Key, err)
		}
		*to = d
		return nil
	}
	if err := set(wf.SetupTimeoutVar, &wf.SetupTimeout); err != nil {
		return err
	}
	if wf.Map != nil {
		if err := set(wf.Map.AgentTimeoutVar, &wf.Map.AgentTimeout); err != nil {
			return err
		}
	}
	for s := range AllSteps(wf.PhaseSteps()) {
		if err := set(s.TimeoutVar, &s.Timeout); err != nil {
			return err
		}
	}
	return nil
}

// PhaseSteps returns the steps of every phase, in the order they run (not
// the steps nested in them: see AllSteps).
func (wf *Workflow) PhaseSteps() []*Step {
	steps := append(append([]*Step(nil), wf.Steps...), wf.Setup...)
	if wf.Map != nil {
		steps = append(steps, wf.Map.Template...)
	}
	steps = append(steps, wf.Reduce...)
	if wf.Merge != nil {
		steps = append(steps, wf.Merge.Steps...)
	}
	return steps
}
