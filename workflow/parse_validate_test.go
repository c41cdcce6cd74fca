package workflow

import (
	"slices"
	"strings"
	"testing"
	"time"
)

func TestParseValidate(t *testing.T) {
	wf, err := Parse("w.yml", []byte(`
- claude: /implement
  validate:
    commands:
      - shell: make coverage
      - claude: /check --output out.json
        commit_required: true
    result_file: out.json
    threshold: 75.5
    timeout: 10m
    on_incomplete:
      claude: "/fill --gaps ${validation.gaps}"
      max_attempts: 5
      fail_workflow: false
      commit_required: true
- shell: build
  validate:
    shell: check
- shell: build
  validate:
    - shell: test
    - shell: lint
  id: short
- claude: /validate-all --output r.json
  validate:
    result_file: r.json
    on_incomplete:
      - shell: "echo ${validation.missing}"
`))
	if err != nil {
		t.Fatal(err)
	}
	v := wf.Steps[0].Validate
	if len(v.Checks) != 2 || v.Checks[0].Kind != ShellCommand || v.Checks[0].CommitRequired ||
		v.Checks[1].Kind != ClaudeCommand || !v.Checks[1].CommitRequired || v.Checks[1].Text.String() != "/check --output out.json" {
		t.Errorf("checks: %+v", v.Checks)
	}
	if v.ResultFile.String() != "out.json" || v.Threshold != 75.5 || v.Timeout != 10*time.Minute {
		t.Errorf("result_file %q, threshold %g, timeout %s", v.ResultFile, v.Threshold, v.Timeout)
	}
	in := v.OnIncomplete
	if len(in.Commands) != 1 || in.Commands[0].Kind != ClaudeCommand || in.MaxAttempts != 5 || in.FailWorkflow || !in.CommitRequired {
		t.Errorf("on_incomplete: %+v", in)
	}

	// Prodigy's defaults: threshold 100; without on_incomplete, none.
	v = wf.Steps[1].Validate
	if len(v.Checks) != 1 || v.Checks[0].Text.String() != "check" || v.ResultFile != nil || v.Threshold != 100 || v.OnIncomplete != nil {
		t.Errorf("shell check: %+v", v)
	}
	// A list is the check's commands.
	if v = wf.Steps[2].Validate; len(v.Checks) != 2 || v.Checks[1].Text.String() != "lint" || v.Threshold != 100 {
		t.Errorf("list: %+v", v)
	}
	// With only a result_file, the step's own command is the check; a
	// list under on_incomplete is its commands, with the defaults
	// max_attempts 2 and fail_workflow true.
	v = wf.Steps[3].Validate
	if v.Checks != nil || v.ResultFile.String() != "r.json" {
		t.Errorf("result_file only: %+v", v)
	}
	if in = v.OnIncomplete; len(in.Commands) != 1 || in.MaxAttempts != 2 || !in.FailWorkflow || in.CommitRequired {
		t.Errorf("on_incomplete list: %+v", in)
	}
	if !slices.Contains(stepKeys, "validate") {
		t.Error("validate is not a step key")
	}
}

func TestParseValidateErrors(t *testing.T) {
	for _, tt := range []struct{ name, src, want string }{
		{"no check", "- shell: x\n  validate: {threshold: 50}\n", `2:13: validate needs a check: shell, claude or commands (or a result_file that the step's own command writes)`},
		{"threshold above", "- shell: x\n  validate: {shell: a, threshold: 101}\n", `2:35: validate.threshold must be between 0 and 100, not 101`},
		{"threshold below", "- shell: x\n  validate: {shell: a, threshold: -1}\n", `2:35: validate.threshold must be between 0 and 100, not -1`},
		{"threshold word", "- shell: x\n  validate: {shell: a, threshold: all}\n", `2:35: validate.threshold must be a number, not "all"`},
		{"empty result_file", "- shell: x\n  validate: {shell: a, result_file: ' '}\n", `2:37: validate.result_file is empty`},
		{"zero timeout", "- shell: x\n  validate: {shell: a, timeout: 0}\n", `2:33: validate.timeout must be longer than zero`},
		{"unknown key", "- shell: x\n  validate: {shell: a, treshold: 5}\n", `2:24: unknown key "treshold" in validate (did you mean "threshold"?)`},
		{"empty commands", "- shell: x\n  validate: {commands: []}\n", `2:24: validate.commands: empty list of commands`},
		{"empty check", "- shell: x\n  validate: {shell: ''}\n", `2:21: validate.shell: empty command`},
		{"command without text", "- shell: x\n  validate: [{commit_required: true}]\n", `2:14: validate[0] needs shell or claude`},
		{"command with both", "- shell: x\n  validate:\n    commands: [{shell: a, claude: b}]\n", `3:27: validate.commands[0] runs one command: shell or claude, not both`},
		{"bare string command", "- shell: x\n  validate: [make test]\n", `2:14: validate[0] must be a mapping, not "make test"`},
		{"on_incomplete without command", "- shell: x\n  validate:\n    shell: a\n    on_incomplete: {max_attempts: 3}\n", `4:20: on_incomplete needs shell, claude or commands: what fills the gaps the check found`},
		{"max_attempts zero", "- shell: x\n  validate:\n    shell: a\n    on_incomplete: {shell: b, max_attempts: 0}\n", `4:45: on_incomplete.max_attempts must be at least 1, not 0`},
		{"fail_workflow word", "- shell: x\n  validate:\n    shell: a\n    on_incomplete: {shell: b, fail_workflow: maybe}\n", `4:46: on_incomplete.fail_workflow must be true or false, not "maybe"`},
		{"validation outside on_incomplete", "- shell: echo ${validation.gaps}\n", `1:10: shell: ${validation.gaps} is set only in the on_incomplete commands of a validate block`},
		{"validation in the check", "- shell: x\n  validate: {shell: 'echo ${validation.completion}'}\n", `2:21: validate.shell: ${validation.completion} is set only in the on_incomplete commands`},
		{"reserved capture", "- shell: x\n  capture_output: validation\n", `2:19: capture_output: "validation" is reserved`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			errs := parseErr(t, "w.yml", tt.src)
			if !slices.ContainsFunc(errs, func(e string) bool { return len(e) >= len(tt.want) && e[:len(tt.want)] == tt.want }) {
				t.Errorf("want an error starting\n  %s\ngot\n  %v", tt.want, errs)
			}
		})
	}
}

// A validate or on_incomplete value that cannot be read is one error, not
// followed by a consequential one.
func TestParseValidateUnreadableValue(t *testing.T) {
	for _, src := range []string{
		"- shell: x\n  validate: !x {}\n",
		"- shell: x\n  validate:\n    shell: a\n    on_incomplete: !x {}\n",
	} {
		if errs := parseErr(t, "w.yml", src); len(errs) != 1 || !strings.Contains(errs[0], "YAML tag !x is not supported") {
			t.Errorf("%q: %v", src, errs)
		}
	}
}
