package workflow

import (
	"strings"
	"testing"
)

// parseWarn parses src, which must be valid, and returns its steps and
// warnings (without the file name).
func parseWarn(t *testing.T, src string) (*Workflow, []string) {
	t.Helper()
	wf, err := Parse("w.yml", []byte(src))
	if err != nil {
		t.Fatalf("%q: %v", src, err)
	}
	var warns []string
	for _, w := range wf.Warnings {
		warns = append(warns, strings.TrimPrefix(w.Error(), "w.yml:"))
	}
	return wf, warns
}

// Prodigy's older step forms run as the Claude command (or shell step)
// Prodigy makes of them, each with a warning naming today's spelling.
func TestOlderStepForms(t *testing.T) {
	for _, tt := range []struct {
		src, kind, text, warn string
	}{
		{"- mmm-lint\n", "claude", "/mmm-lint", `1:3: warning: a bare string step is Prodigy's older spelling of the Claude command /mmm-lint, and runs as one; write claude: "/mmm-lint"`},
		{"- /prodigy-implement-spec 12\n", "claude", "/prodigy-implement-spec 12", `write claude: "/prodigy-implement-spec 12"`},
		{"- name: prodigy-lint\n  commit_required: true\n", "claude", "/prodigy-lint", `1:9: warning: a step with only a name is Prodigy's older spelling of the Claude command /prodigy-lint, and runs as one; write claude: "/prodigy-lint"`},
		{"- name: /fix\n  args: [a, '', \"${X}\"]\n", "claude", "/fix a ${X}", `write claude: "/fix a ${X}"`},
		{"- name: review\n  options: {focus: security}\n", "claude", "/review", `2:3: warning: options of a step with only a name have no effect; Prodigy ignores them too`},
		{"- test: {command: make check}\n", "shell", "make check", `1:3: warning: test: is Prodigy's deprecated spelling of shell: with on_failure, and runs as one; write shell: "make check" (its output is ${test.output})`},
	} {
		wf, warns := parseWarn(t, tt.src)
		if len(wf.Steps) != 1 {
			t.Fatalf("%q: %d steps, want 1", tt.src, len(wf.Steps))
		}
		c := wf.Steps[0].Command
		if string(c.Kind) != tt.kind || c.Text.String() != tt.text {
			t.Errorf("%q: %s %q, want %s %q", tt.src, c.Kind, c.Text.String(), tt.kind, tt.text)
		}
		if !strings.Contains(strings.Join(warns, "\n"), tt.warn) {
			t.Errorf("%q: want a warning containing\n  %s\ngot\n  %s", tt.src, tt.warn, strings.Join(warns, "\n  "))
		}
	}
}

// A test: step is shell: with test's on_failure, and sets ${test.output},
// which a later step may read (and no step before it).
func TestTestStep(t *testing.T) {
	wf, _ := parseWarn(t, "- test:\n    command: make\n    on_failure:\n      claude: /fix ${shell.output}\n- shell: echo ${test.output}\n")
	s := wf.Steps[0]
	if s.OnFailure.Action != FailHandler || len(s.OnFailure.Commands) != 1 || s.OnFailure.Commands[0].Kind != ClaudeCommand {
		t.Errorf("on_failure = %+v, want the claude handler", s.OnFailure)
	}
	if s.Capture != testOutputVar {
		t.Errorf("capture = %q, want %q", s.Capture, testOutputVar)
	}
	errs := parseErr(t, "w.yml", "- shell: echo ${test.output}\n- test: {command: make}\n")
	if len(errs) != 1 || !strings.Contains(errs[0], "1:10: shell: ${test.output}: no test: step has run here: that step runs later") {
		t.Errorf("read before the test step: %q", errs)
	}
	errs = parseErr(t, "w.yml", "- test: {comand: make}\n")
	if len(errs) != 1 || !strings.Contains(errs[0], `unknown key "comand" in test (did you mean "command"?)`) {
		t.Errorf("misspelt command: %q", errs)
	}
}

// A key runner does not know and that is no likely misspelling of a key
// known where it stands is one warning each, as Prodigy ignores it;
// analyze: steps are left out; runner's own keys misspelt stay errors.
func TestKeysProdigyIgnores(t *testing.T) {
	for _, tt := range []struct {
		src   string
		steps int
		warns []string
	}{
		{"- claude: /x\n  analysis: {max_cache_age: 300}\n  focus: security\n  inputs: [a]\n- claude: /y\n  analysis: {}\n", 2, []string{
			`2:3: warning: ignored: runner does not know "analysis" here; Prodigy ignores it too`,
			`3:3: warning: ignored: runner does not know "focus" here; Prodigy ignores it too`,
			`4:3: warning: ignored: runner does not know "inputs" here; Prodigy ignores it too`,
		}},
		{"- analyze: {save: true}\n- claude: /x\n- analyze: {}\n", 1, []string{
			`1:3: warning: analyze: steps (Prodigy's code analysis) have no effect and are left out; Prodigy parses them and never runs them either`,
		}},
		{"- claude: /x\n  metadata: {analysis: {}}\n", 1, []string{`2:14: warning: ignored: runner does not know "analysis" here; Prodigy ignores it too`}},
		{"mode: mapreduce\nmap:\n  input: x\n  timeout_per_agent: 60\n  retry_on_failure: 2\n  agent_template: [{shell: x}]\n", 0, []string{
			`4:3: warning: ignored: runner does not know "timeout_per_agent" here; Prodigy ignores it too`,
			`5:3: warning: ignored: runner does not know "retry_on_failure" here; Prodigy ignores it too`,
		}},
		{"- shell: x\n  validate: [{shell: c, result_file: r.json, threshold: 80, on_incomplete: {claude: /f}}]\n", 1, []string{
			`2:25: warning: ignored: runner does not know "result_file" here`, `2:46: warning: ignored: runner does not know "threshold" here`, `2:61: warning: ignored: runner does not know "on_incomplete" here`,
		}},
		{"commands: [{shell: x}]\nconfig: {max_iterations: 2}\n", 1, []string{
			`2:1: warning: ignored: runner does not know "config" here; Prodigy ignores it too`,
		}},
		{"mode: mapreduce\nmap: {input: x, agent_template: [{shell: x}], max_attempts: 2}\ncollect_metrics: true\nenv: {N: {default: 3, description: d}}\n", 0, []string{
			`2:47: warning: ignored: runner does not know "max_attempts" here; Prodigy ignores it too`,
			`3:1: warning: ignored: runner does not know "collect_metrics" here; Prodigy ignores it too`,
			`4:11: warning: env.N: a mapping with default: is not an env form; runner sets the variable to its default`,
			`4:23: warning: ignored: runner does not know "description" here; Prodigy ignores it too`,
		}},
		{"- shell: x\n  retry_config: {backoff: {exponential: {initial: 1s}}}\n", 1, []string{
			`2:42: warning: ignored: runner does not know "initial" here; Prodigy ignores it too`,
		}},
	} {
		wf, warns := parseWarn(t, tt.src)
		if wf.Mode == Standard && len(wf.Steps) != tt.steps {
			t.Errorf("%q: %d steps, want %d", tt.src, len(wf.Steps), tt.steps)
		}
		if len(warns) != len(tt.warns) {
			t.Errorf("%q: %d warnings, want %d:\n  %s", tt.src, len(warns), len(tt.warns), strings.Join(warns, "\n  "))
			continue
		}
		for i, w := range tt.warns {
			if !strings.HasPrefix(warns[i], w) {
				t.Errorf("%q: warning %d is\n  %s\nwant it to start\n  %s", tt.src, i, warns[i], w)
			}
		}
	}
	wf, _ := parseWarn(t, "- shell: x\n  validate: {shell: a, claude: /b}\n")
	if checks := wf.Steps[0].Validate.Checks; len(checks) != 1 || checks[0].Kind != ClaudeCommand {
		t.Errorf("validate with shell and claude runs %+v, want the claude check alone", checks)
	}
	for _, tt := range []struct{ src, want string }{
		{"- shel: x\n", `unknown key "shel" in step commands[0] (did you mean "shell"?)`},
		{"- shell: x\n  retry_confg: {attempts: 2}\n", `did you mean "retry_config"?`},
		{"mode: mapreduce\nmap: {input: x, max_paralel: 2, agent_template: [{shell: x}]}\n", `did you mean "max_parallel"?`},
		{"- shell: x\n  retry_config: {backoff: {exponentail: {}}}\n", `unknown key "exponentail"`},
		{"- shell: x\n  retry_config: {backoff: {geometric: {}}}\n", `unknown key "geometric"`},
		{"- goal_seek: {}\n", `goal_seek (Prodigy's iterative refinement with a scoring command) is not supported`},
		{"extends: base\ncommands: [{shell: x}]\n", `1:10: extends: base workflow "base" not found (looked for base.yml in bases/, templates/, workflows/ and ./)`},
	} {
		if errs := parseErr(t, "w.yml", tt.src); len(errs) != 1 || !strings.Contains(errs[0], tt.want) {
			t.Errorf("%q: want one error containing %q, got %q", tt.src, tt.want, errs)
		}
	}
}

// A placeholder with a filter that takes an argument (Prodigy's
// capture-json-processing.yml: ${final_summary|length:100}) is left as
// written, as Prodigy leaves it, with a warning at its place.
func TestFilterWithArgumentWarns(t *testing.T) {
	_, warns := parseWarn(t, "- shell: echo x\n  capture: s\n- shell: |\n    echo 'saved ${s|length:100} characters'\n")
	want := `4:17: warning: shell: ${s|length:100} is left as written: neither runner nor Prodigy has a filter that takes an argument (runner's are |raw and |json)`
	if len(warns) != 1 || warns[0] != want {
		t.Errorf("warnings %q, want %q", warns, want)
	}
}

// analyze beside a command is one warning, and the command runs (Prodigy
// runs a step's claude or shell before its analyze).
func TestAnalyzeBesideACommand(t *testing.T) {
	wf, warns := parseWarn(t, "- claude: /lint\n  analyze: {force_refresh: true}\n")
	if len(wf.Steps) != 1 || wf.Steps[0].Command.Text.String() != "/lint" {
		t.Fatalf("steps %+v, want the claude step", wf.Steps)
	}
	want := `2:3: warning: ignored: runner does not know "analyze" here; Prodigy ignores it too`
	if len(warns) != 1 || warns[0] != want {
		t.Errorf("warnings %q, want %q", warns, want)
	}
}
