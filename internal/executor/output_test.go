package executor

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/runnerdev/runner/internal/state"
	"github.com/runnerdev/runner/workflow"
	"github.com/runnerdev/runner/workflow/interp"
)

// Prodigy's short paths resolve only where the path itself does not: a
// JSON capture's own field first, then the capture's metadata, then the
// step of that id.
func TestLookupShortPaths(t *testing.T) {
	sc := NewScope(nil, nil)
	sc.Apply(map[string]any{
		"deploy":                            map[string]any{"success": "from the JSON"},
		workflow.CaptureMetaVar + ".deploy": map[string]any{"success": true, "exit_code": 0},
		"count":                             int64(3),
		workflow.CaptureMetaVar + ".count":  map[string]any{"exit_code": 0, "commits": []any{"abc"}},
		"steps.unit-tests":                  map[string]any{"output": "2 passed"},
	})
	lookup := sc.Lookup()
	for path, want := range map[string]any{
		"deploy.success":    "from the JSON",
		"deploy.exit_code":  0,
		"count":             int64(3),
		"count.commits[0]":  "abc",
		"unit-tests.output": "2 passed",
	} {
		if got, ok := lookup(path); !ok || got != want {
			t.Errorf("%s = %v, %v; want %v", path, got, ok, want)
		}
	}
	for _, path := range []string{"count.nope", "unit-tests.nope", "nobody.output", "nobody"} {
		if got, ok := lookup(path); ok {
			t.Errorf("%s = %v, want undefined", path, got)
		}
	}
}

// An output over outputLimit is not cut: it is Unavailable, and the
// journal keeps it so across a resume.
func TestOutputOverLimitIsUnavailable(t *testing.T) {
	if v := outputValue(streamTail{tail: []byte("ok\n\n"), total: 4}, "${x.output}"); v != "ok" {
		t.Errorf("short output = %q, want ok", v)
	}
	v := outputValue(streamTail{tail: []byte("end"), total: outputLimit + 1}, "${x.output}")
	u, ok := v.(interp.Unavailable)
	if !ok || !strings.Contains(u.Reason, "${x.output}: the step printed 1.0 MiB") {
		t.Fatalf("long output = %#v", v)
	}
	vars := map[string]any{"steps.x": map[string]any{"output": u, "exit_code": 0}}
	rec := StepResult{Vars: vars}.Record(&workflow.Step{})
	if _, ok := vars["steps.x"].(map[string]any)["output"].(interp.Unavailable); !ok {
		t.Error("Record changed the scope's own value")
	}
	back := RecordedVars(roundTrip(t, rec))
	if got := back["steps.x"].(map[string]any)["output"]; got != u {
		t.Errorf("after the journal: %#v, want %#v", got, u)
	}
}

// RecordedVars leaves the record as it was: the item-state index and a
// task's checkpoints hold the same record while the item runs (changing
// it in place was a data race with the index's writer).
func TestRecordedVarsLeavesTheRecord(t *testing.T) {
	rec := roundTrip(t, StepResult{Vars: map[string]any{
		"n":       int64(7),
		"steps.x": map[string]any{"output": interp.Unavailable{Reason: "over 1 MiB"}, "commits": []any{"abc"}},
	}}.Record(&workflow.Step{}))
	before, err := json.Marshal(rec)
	if err != nil {
		t.Fatal(err)
	}
	vars := RecordedVars(rec)
	if _, ok := vars["steps.x"].(map[string]any)["output"].(interp.Unavailable); !ok {
		t.Fatalf("RecordedVars: %#v", vars)
	}
	if _, ok := rec.Vars["n"].(json.Number); !ok {
		t.Errorf("the record's number is now %T", rec.Vars["n"])
	}
	if _, ok := rec.Vars["steps.x"].(map[string]any)["output"].(map[string]any); !ok {
		t.Errorf("the record's unavailable mark is now %T", rec.Vars["steps.x"].(map[string]any)["output"])
	}
	after, err := json.Marshal(rec)
	if err != nil || !bytes.Equal(before, after) {
		t.Errorf("the record changed:\n%s\n%s (%v)", before, after, err)
	}
}

// roundTrip encodes a record as the journal does and decodes it back.
func roundTrip(t *testing.T, rec state.StepRecord) state.StepRecord {
	t.Helper()
	line, err := json.Marshal(rec)
	if err != nil {
		t.Fatal(err)
	}
	var back state.StepRecord
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.UseNumber()
	if err := dec.Decode(&back); err != nil {
		t.Fatal(err)
	}
	return back
}

// A boolean capture reads true or false, and any other output as whether
// the command succeeded.
func TestBooleanCaptureFallsBackToExitStatus(t *testing.T) {
	for _, c := range []struct {
		out       string
		succeeded bool
		want      bool
	}{{"true\n", false, true}, {"false", true, false}, {"no warnings", true, true}, {"Diff in a.rs", false, false}, {"test result: FAILED\nfalse\n", true, false}, {"1 passed\n true", false, true}} {
		v, err := captureValue(workflow.CaptureBoolean, []byte(c.out), c.succeeded)
		if err != nil || v != c.want {
			t.Errorf("%q (succeeded %v) = %v, %v; want %v", c.out, c.succeeded, v, err, c.want)
		}
	}
}

func TestOutputMatches(t *testing.T) {
	for _, c := range []struct {
		pattern, file string
		want          bool
	}{
		{"*-spec.md", "specs/42-spec.md", true},
		{"*-spec.md", "specs/42-spec.md.bak", false},
		{"specs/*.md", "specs/42-spec.md", true},
		{"specs/*.md", "docs/specs/42-spec.md", false},
	} {
		if got := outputMatches(c.pattern, c.file); got != c.want {
			t.Errorf("outputMatches(%q, %q) = %v", c.pattern, c.file, got)
		}
	}
}

// After a resume, ${last.output} of a step that finished before it fails
// with the reason, as ${shell.output} does, rather than reading a value
// from before.
func TestResumedLastOutput(t *testing.T) {
	sc := NewScope(nil, nil)
	ResumedOutput(&workflow.Step{Command: workflow.Command{Kind: workflow.ShellCommand}, ID: "build"}, workflow.PhaseSetup, sc)
	for _, ref := range []string{"${shell.output}", "${last.output}"} {
		tmpl, err := interp.Parse("echo " + ref)
		if err != nil {
			t.Fatal(err)
		}
		_, err = tmpl.Expand(sc.Lookup(), interp.Shell)
		if err == nil || !strings.Contains(err.Error(), ref+`: step "build" finished before the job was resumed`) {
			t.Errorf("%s: got %v", ref, err)
		}
	}
}
