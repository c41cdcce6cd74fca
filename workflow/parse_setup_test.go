package workflow

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/runnerdev/runner/workflow/interp"
)

// setup: {commands, timeout, capture_outputs} is setup's steps with a
// timeout for the whole phase, and captures named by command index.
func TestSetupConfig(t *testing.T) {
	wf, err := Parse("w.yml", []byte(`
mode: mapreduce
setup:
  timeout: 300
  commands:
    - shell: ls
    - shell: make 2>&1
  capture_outputs:
    files: 0
    log: {command_index: 1, source: combined}
map: {input: "${files}", agent_template: [{shell: "echo ${item} ${log}"}]}
`))
	if err != nil {
		t.Fatal(err)
	}
	if wf.SetupTimeout != 300*time.Second || len(wf.Setup) != 2 {
		t.Fatalf("setup timeout %v, %d steps", wf.SetupTimeout, len(wf.Setup))
	}
	if s := wf.Setup[0]; s.Capture != "files" || s.CaptureStreams != StreamStdout {
		t.Errorf("command 0 captures %q from %s", s.Capture, s.CaptureStreams)
	}
	if s := wf.Setup[1]; s.Capture != "log" || s.CaptureStreams != StreamBoth {
		t.Errorf("command 1 captures %q from %s", s.Capture, s.CaptureStreams)
	}

	for _, tt := range []struct{ src, want string }{
		{"setup: {timeout: 5}", `3:8: setup needs commands: a list of steps`},
		{"setup: {commands: [{shell: a}], capture_outputs: {n: 1}}", `3:54: setup.capture_outputs.n: setup has 1 commands, so there is no command 1`},
		{"setup: {commands: [{shell: a, capture_output: x}], capture_outputs: {n: 0}}", `3:73: setup.capture_outputs.n: command 0 already captures its output as x`},
		{"setup: {commands: [{shell: a}], capture_outputs: {item: 0}}", `3:51: setup.capture_outputs.item: "item" is reserved`},
		{"setup: {commands: [{shell: a}], capture_outputs: {n: {source: stderr}}}", `3:54: setup.capture_outputs.n needs command_index`},
		{"setup: {commands: [{shell: a}], capture_outputs: {n: {command_index: 0, pattern: 'v(.*)'}}}", `3:73: setup.capture_outputs.n.pattern (Prodigy's capture extraction) is not supported: extract the text in the command itself`},
		{"setup: {commands: [{shell: a}], capture_outputs: {n: {command_index: 0, source: all}}}", `3:81: setup.capture_outputs.n.source must be one of stdout, stderr, both, combined`},
		{"setup: {commands: [{shell: a}], timeout: 0}", `3:42: setup.timeout must be longer than zero`},
	} {
		src := "mode: mapreduce\nmap: {input: x, agent_template: [{shell: x}]}\n" + tt.src + "\n"
		errs := parseErr(t, "w.yml", src)
		if !strings.Contains(strings.Join(errs, "\n"), tt.want) {
			t.Errorf("%q: want an error containing\n  %s\ngot\n  %s", tt.src, tt.want, strings.Join(errs, "\n  "))
		}
		if len(errs) != 1 {
			t.Errorf("%q: want one error, got\n  %s", tt.src, strings.Join(errs, "\n  "))
		}
	}
}

// A duration written as $VAR or ${VAR} is resolved when the job starts;
// one that is not set or not a duration is an error naming its key and
// place.
func TestVarDurations(t *testing.T) {
	wf, err := Parse("w.yml", []byte(`
mode: mapreduce
setup:
  timeout: ${SETUP_TIMEOUT}
  commands: [{shell: a, timeout: $STEP}]
map:
  input: x
  agent_timeout_secs: $AGENT
  agent_template: [{shell: x}]
`))
	if err != nil {
		t.Fatal(err)
	}
	if wf.SetupTimeout != 0 || wf.Map.AgentTimeout != 0 || wf.Setup[0].Timeout != 0 {
		t.Fatal("a $VAR duration is set before the job starts")
	}
	vars := map[string]any{"SETUP_TIMEOUT": "2m", "STEP": "30", "AGENT": 600}
	if err := wf.ResolveDurations(interp.MapLookup(vars)); err != nil {
		t.Fatal(err)
	}
	if wf.SetupTimeout != 2*time.Minute || wf.Setup[0].Timeout != 30*time.Second || wf.Map.AgentTimeout != 600*time.Second {
		t.Errorf("resolved setup %v, step %v, agent %v", wf.SetupTimeout, wf.Setup[0].Timeout, wf.Map.AgentTimeout)
	}

	for vars, want := range map[string]string{
		`{"SETUP_TIMEOUT": "soon", "STEP": 1, "AGENT": 1}`: `w.yml:4:12: setup.timeout: ${SETUP_TIMEOUT} is "soon", not a duration`,
		`{"SETUP_TIMEOUT": 1, "STEP": 0, "AGENT": 1}`:      `w.yml:5:34: setup.commands[0].timeout: $STEP is "0", not a duration: "0" is not longer than zero`,
		`{"SETUP_TIMEOUT": 1, "STEP": 1}`:                  `w.yml:8:23: map.agent_timeout_secs: $AGENT is not set (give it in env, with --set AGENT=DURATION, or in the environment)`,
	} {
		var m map[string]any
		if err := json.Unmarshal([]byte(vars), &m); err != nil {
			t.Fatal(err)
		}
		err := wf.ResolveDurations(interp.MapLookup(m))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: err = %v, want %q", vars, err, want)
		}
	}

	for _, tt := range []struct{ src, want string }{
		{"- shell: x\n  timeout: $1\n", `2:12: timeout: bad duration "$1"`},
		{"mode: mapreduce\nmap: {input: x, agent_timeout: $A, agent_timeout_secs: 5, agent_template: [{shell: x}]}\n", `2:36: map.agent_timeout and map.agent_timeout_secs both set the agent timeout; keep one`},
	} {
		errs := parseErr(t, "w.yml", tt.src)
		if !strings.Contains(strings.Join(errs, "\n"), tt.want) {
			t.Errorf("%q: want an error containing\n  %s\ngot\n  %s", tt.src, tt.want, strings.Join(errs, "\n  "))
		}
		if len(errs) != 1 {
			t.Errorf("%q: want one error, got\n  %s", tt.src, strings.Join(errs, "\n  "))
		}
	}
}
