package workflow

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// capture turns a successful command's output into the variables the step
// defines, sets them in sc and returns them for the journal.
func (x *Executor) capture(step *Step, res commandResult, sc *Scope) (map[string]any, error) {
	if step.Capture == "" && step.ID == "" {
		return nil, nil
	}
	vars := map[string]any{}
	if step.ID != "" {
		vars["steps."+step.ID] = map[string]any{
			"output":    strings.TrimRight(string(res.stdout), "\r\n"),
			"exit_code": res.ExitCode,
			"success":   !res.Failed(),
		}
	}
	if step.Capture != "" {
		v, err := captureValue(step.CaptureFormat, capturedText(step.CaptureStreams, res))
		if err != nil {
			return nil, fmt.Errorf("capture_output: %w", err)
		}
		name := step.Capture
		if name == "shell" {
			name = "shell.output"
		}
		vars[name] = v
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

func capturedText(streams CaptureStreams, res commandResult) []byte {
	switch streams {
	case StreamStderr:
		return res.stderr
	case StreamBoth:
		return append(append([]byte{}, res.stdout...), res.stderr...)
	}
	return res.stdout
}

// captureValue converts output per capture_format.
func captureValue(format CaptureFormat, out []byte) (any, error) {
	text := strings.TrimRight(string(out), "\r\n")
	switch format {
	case CaptureJSON:
		v, err := DecodeValue(out)
		if err != nil {
			return nil, fmt.Errorf("output is not JSON: %w", err)
		}
		return v, nil
	case CaptureLines:
		lines := []any{}
		for _, l := range strings.Split(text, "\n") {
			if l = strings.TrimRight(l, "\r"); l != "" {
				lines = append(lines, l)
			}
		}
		return lines, nil
	case CaptureNumber:
		t := strings.TrimSpace(text)
		if n, err := strconv.ParseInt(t, 10, 64); err == nil {
			return n, nil
		}
		f, err := strconv.ParseFloat(t, 64)
		if err != nil {
			return nil, fmt.Errorf("output %q is not a number", abbreviate(t))
		}
		return f, nil
	case CaptureBoolean:
		b, err := strconv.ParseBool(strings.TrimSpace(text))
		if err != nil {
			return nil, fmt.Errorf("output %q is not true or false", abbreviate(text))
		}
		return b, nil
	}
	return text, nil
}

// DecodeValue decodes one JSON value with integers as int64 and other
// numbers as float64, as expressions and interpolation expect them, and
// strings with the bytes their \udc80-\udcff escapes stand for (see
// EncodeString).
func DecodeValue(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	var err error
	if hasByteEscape(data) {
		v, err = nextValue(dec, data)
	} else {
		err = dec.Decode(&v)
	}
	if err != nil {
		return nil, err
	}
	return normalizeNumbers(v), nil
}

// normalizeNumbers turns json.Number into int64 or float64 so expressions
// compare them naturally.
func normalizeNumbers(v any) any {
	switch v := v.(type) {
	case json.Number:
		if n, err := v.Int64(); err == nil {
			return n
		}
		f, _ := v.Float64()
		return f
	case map[string]any:
		for k, e := range v {
			v[k] = normalizeNumbers(e)
		}
	case []any:
		for i, e := range v {
			v[i] = normalizeNumbers(e)
		}
	}
	return v
}

func abbreviate(s string) string {
	if len(s) > 40 {
		return s[:37] + "..."
	}
	return s
}
