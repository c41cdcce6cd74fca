package executor

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/runnerdev/runner/internal/jsonvalue"
	"github.com/runnerdev/runner/workflow"
	"github.com/runnerdev/runner/workflow/interp"
)

// capture turns a command's output into the variables the step defines,
// sets them in sc and returns them for the journal. A capture whose output
// does not convert is left out, with the error.
func (x *Executor) capture(step *workflow.Step, res commandResult, sc *Scope) (map[string]any, error) {
	if step.Capture == "" && step.ID == "" {
		return nil, nil
	}
	vars := map[string]any{}
	if step.ID != "" {
		v := map[string]any{
			"output":    outputValue(res.stdoutTail, "${"+step.ID+".output}"),
			"exit_code": res.ExitCode,
			"success":   !res.Failed(),
		}
		if res.commits != nil {
			v["commits"] = commitList(res.commits)
		}
		if res.usage != nil {
			v["cost_usd"], v["tokens"] = res.usage.CostUSD, res.usage.Tokens()
		}
		for name, path := range res.outputs {
			v[name] = path
		}
		vars["steps."+step.ID] = v
	}
	var err error
	if step.Capture != "" {
		var v any
		if v, err = captureValue(step.CaptureFormat, capturedText(step.CaptureStreams, res), !res.Failed()); err == nil {
			vars[step.Capture] = v
		} else {
			err = fmt.Errorf("capture_output: %w", err)
		}
		if !strings.Contains(step.Capture, ".") {
			vars[workflow.CaptureMetaVar+"."+step.Capture] = captureMetadata(step.Capture, res)
		}
	}
	sc.Apply(vars)
	return vars, err
}

// captureMetadata is what a capture records besides its value.
func captureMetadata(name string, res commandResult) map[string]any {
	m := map[string]any{
		"exit_code": res.ExitCode,
		"success":   !res.Failed(),
		"duration":  res.Duration.Seconds(),
		"stderr":    outputValue(res.stderrTail, "${"+name+".stderr}"),
	}
	if res.commits != nil {
		m["commits"] = commitList(res.commits)
	}
	return m
}

// commitList is a step's commits as ${X.commits} inserts them: a JSON
// array of SHAs, even though it holds only strings.
func commitList(commits []string) interp.JSONList {
	out := make(interp.JSONList, len(commits))
	for i, c := range commits {
		out[i] = c
	}
	return out
}

// Apply sets variables recorded as "name" or "ns.key" paths.
func (s *Scope) Apply(vars map[string]any) {
	for path, v := range vars {
		if ns, key, ok := strings.Cut(path, "."); ok {
			s.SetIn(ns, key, v)
		} else {
			s.Set(path, v)
		}
	}
}

func capturedText(streams workflow.CaptureStreams, res commandResult) []byte {
	switch streams {
	case workflow.StreamStderr:
		return res.stderr
	case workflow.StreamBoth:
		return append(append([]byte{}, res.stdout...), res.stderr...)
	case workflow.StreamNone:
		return nil
	}
	return res.stdout
}

// captureValue converts output per capture_format; a boolean capture whose
// output is not true or false is whether the command succeeded.
func captureValue(format workflow.CaptureFormat, out []byte, succeeded bool) (any, error) {
	text := strings.TrimRight(string(out), "\r\n")
	switch format {
	case workflow.CaptureJSON:
		v, err := jsonvalue.Decode(out)
		if err != nil {
			return nil, fmt.Errorf("output is not JSON: %w", err)
		}
		return v, nil
	case workflow.CaptureLines:
		lines := []any{}
		for _, l := range strings.Split(text, "\n") {
			if l = strings.TrimRight(l, "\r"); l != "" {
				lines = append(lines, l)
			}
		}
		return lines, nil
	case workflow.CaptureNumber:
		t := strings.TrimSpace(text)
		if n, err := strconv.ParseInt(t, 10, 64); err == nil {
			return n, nil
		}
		f, err := strconv.ParseFloat(t, 64)
		if err != nil {
			return nil, fmt.Errorf("output %q is not a number", workflow.Abbreviate(t))
		}
		return f, nil
	case workflow.CaptureBoolean:
		// The output, or its last line (a command that prints a log and
		// then its verdict: cargo test && echo true || echo false), else
		// whether the command succeeded.
		text = strings.TrimSpace(text)
		if b, err := strconv.ParseBool(text); err == nil {
			return b, nil
		}
		if b, err := strconv.ParseBool(strings.TrimSpace(text[strings.LastIndexByte(text, '\n')+1:])); err == nil {
			return b, nil
		}
		return succeeded, nil
	}
	return text, nil
}
