package executor

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/runnerdev/runner/jsonvalue"
	"github.com/runnerdev/runner/workflow"
)

// capture turns a successful command's output into the variables the step
// defines, sets them in sc and returns them for the journal.
func (x *Executor) capture(step *workflow.Step, res commandResult, sc *Scope) (map[string]any, error) {
	if step.Capture == "" && step.ID == "" {
		return nil, nil
	}
	vars := map[string]any{}
	if step.ID != "" {
		v := map[string]any{
			"output":    strings.TrimRight(string(res.stdout), "\r\n"),
			"exit_code": res.ExitCode,
			"success":   !res.Failed(),
		}
		if res.commits != nil {
			commits := make([]any, len(res.commits))
			for i, c := range res.commits {
				commits[i] = c
			}
			v["commits"] = commits
		}
		vars["steps."+step.ID] = v
	}
	if step.Capture != "" {
		v, err := captureValue(step.CaptureFormat, capturedText(step.CaptureStreams, res))
		if err != nil {
			return nil, fmt.Errorf("capture_output: %w", err)
		}
		vars[step.Capture] = v
	}
	sc.Apply(vars)
	return vars, nil
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
	}
	return res.stdout
}

// captureValue converts output per capture_format.
func captureValue(format workflow.CaptureFormat, out []byte) (any, error) {
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
		b, err := strconv.ParseBool(strings.TrimSpace(text))
		if err != nil {
			return nil, fmt.Errorf("output %q is not true or false", workflow.Abbreviate(text))
		}
		return b, nil
	}
	return text, nil
}
