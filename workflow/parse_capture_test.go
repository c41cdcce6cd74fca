package workflow

import (
	"slices"
	"strings"
	"testing"
)

// Prodigy's spellings of captures and outputs parse to runner's fields.
func TestParseProdigyCaptures(t *testing.T) {
	wf, err := Parse("c.yml", []byte(`
- shell: echo 1
  capture: n
  capture_streams: {stdout: true, stderr: true, duration: true}
- shell: echo 2
  capture_output: "shell.output"
- claude: /review
  capture_output: "claude.output"
  capture_streams: {stdout: false, stderr: true}
- shell: echo 4
  capture: quiet
  capture_streams: {stdout: false}
- claude: /coverage
  id: coverage
  outputs:
    spec: {file_pattern: "*-coverage-improvements.md"}
- shell: echo ${coverage.spec} ${n.exit_code} ${quiet.stderr}
`))
	if err != nil {
		t.Fatal(err)
	}
	s := wf.Steps
	for i, want := range []struct {
		capture string
		streams CaptureStreams
	}{{"n", StreamBoth}, {"shell.output", StreamStdout}, {"claude.output", StreamStderr}, {"quiet", StreamNone}} {
		if s[i].Capture != want.capture || s[i].CaptureStreams != want.streams {
			t.Errorf("step %d: capture %q streams %q, want %q %q", i, s[i].Capture, s[i].CaptureStreams, want.capture, want.streams)
		}
	}
	if want := []StepOutput{{Name: "spec", Pattern: "*-coverage-improvements.md"}}; !slices.Equal(s[4].Outputs, want) || !s[4].TracksCommits() {
		t.Errorf("outputs %v (tracks commits %v), want %v", s[4].Outputs, s[4].TracksCommits(), want)
	}
}

func TestShortPath(t *testing.T) {
	for path, want := range map[string][2]string{
		"build.output":           {"build", "output"},
		"unit-tests.exit_code":   {"unit-tests", "exit_code"},
		"meta.packages[0].name":  {"meta", "packages"},
		"build":                  {},
		"lines[0]":               {},
		"steps.build.output":     {},
		"item.path":              {},
		"env.HOME":               {},
		"worktree.path":          {},
		"shell.output":           {},
		"map.results[0].success": {},
	} {
		name, field, ok := shortPath(path)
		if ok != (want[0] != "") || name != want[0] || field != want[1] {
			t.Errorf("shortPath(%q) = %q, %q, %v; want %q, %q", path, name, field, ok, want[0], want[1])
		}
	}
}

// In a condition NAME.field reads the value's own field, else the
// capture's metadata, else the step of that id.
func TestConditionShortFields(t *testing.T) {
	wf, err := Parse("w.yml", []byte(`
- shell: echo own
  capture: deploy
  capture_format: json
- shell: echo x
  capture: build
  id: unit-tests
- shell: echo y
  when: 'deploy.success == "own" && deploy.exit_code == 0 && !build.success && ${unit-tests.exit_code} == 2 && unit.output == nil'
- shell: echo z
  id: unit
`))
	if err == nil || !strings.Contains(err.Error(), `${unit.output} is not set here`) {
		t.Fatalf("want unit.output rejected (a later step), got %v", err)
	}
	wf, err = Parse("w.yml", []byte(`
- shell: echo own
  capture: deploy
  capture_format: json
- shell: echo x
  capture: build
  id: unit-tests
- shell: echo y
  when: 'deploy.success == "own" && deploy.exit_code == 0 && !build.success && ${unit-tests.exit_code} == 2'
`))
	if err != nil {
		t.Fatal(err)
	}
	vars := map[string]any{
		"deploy": map[string]any{"success": "own"},
		"build":  "x",
		CaptureMetaVar: map[string]any{
			"deploy": map[string]any{"success": true, "exit_code": 0},
			"build":  map[string]any{"success": false},
		},
		"steps": map[string]any{"unit-tests": map[string]any{"exit_code": 2}},
	}
	if ok, err := wf.Steps[2].When.Bool(vars); !ok || err != nil {
		t.Errorf("when = %v, %v; want true", ok, err)
	}
}
