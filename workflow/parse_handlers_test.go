package workflow

import (
	"strings"
	"testing"
)

// on_failure's fix-and-retry fields: max_attempts (or max_retries),
// fail_workflow, commit_required; without max_attempts there is no re-run.
func TestParseFixLoop(t *testing.T) {
	wf, err := Parse("w.yml", []byte(`
- shell: just test
  on_failure:
    claude: "/debug ${shell.output}"
    max_attempts: 3
    fail_workflow: true
    commit_required: true
- shell: cargo test
  on_failure: {shell: "echo fix", max_retries: 2}
- shell: cargo test
  on_failure: {shell: "echo cleanup"}
- id: doc
  shell: cargo test --doc
  on_failure:
    claude: /fix-doc-tests
    on_success: {shell: cargo test --doc, on_failure: {claude: /deep-fix}}
`))
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []Failure{
		{Action: FailHandler, MaxAttempts: 3, FailWorkflow: true, CommitRequired: true},
		{Action: FailHandler, MaxAttempts: 2},
		{Action: FailHandler},
	} {
		got := wf.Steps[i].OnFailure
		if got.Action != want.Action || got.MaxAttempts != want.MaxAttempts || got.FailWorkflow != want.FailWorkflow || got.CommitRequired != want.CommitRequired || len(got.Commands) != 1 {
			t.Errorf("step %d: on_failure %+v, want %+v with one command", i, got, want)
		}
	}
	if k := wf.Steps[0].OnFailure.Commands[0].Kind; k != ClaudeCommand {
		t.Errorf("the handler's command is %s, want claude", k)
	}
	verify := wf.Steps[3].OnFailure.OnSuccess
	if len(verify) != 1 || verify[0].Key() != "doc.on_failure.on_success" || verify[0].OnFailure.Action != FailHandler {
		t.Errorf("the handler's on_success: %+v", verify)
	}
}

// A shell step's claude: handler without max_attempts is a fix loop of 3
// runs (Prodigy's agent fix); a shell: handler, a claude: step's handler
// and a list of commands run once. In reduce every handler runs once:
// max_attempts and fail_workflow: true there are warned of and dropped.
func TestParseFixLoopDefaults(t *testing.T) {
	wf, err := Parse("w.yml", []byte(`
mode: mapreduce
setup:
  - shell: just test
    on_failure: {claude: /debug}
  - shell: notify
    on_failure: {shell: echo cleanup}
  - claude: /implement
    on_failure: {claude: /debug}
  - shell: just test
    on_failure: {claude: /debug, max_retries: 1}
  - shell: just test
    on_failure: {commands: [{claude: /debug}]}
map:
  input: items.json
  agent_template:
    - shell: just lint
      on_failure: {claude: /lint}
reduce:
  - shell: just test
    on_failure: {claude: /debug}
  - shell: just test
    on_failure: {claude: /debug, max_attempts: 5, fail_workflow: true}
`))
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []int{3, 0, 0, 1, 0} {
		if got := wf.Setup[i].OnFailure.MaxAttempts; got != want {
			t.Errorf("setup step %d: max_attempts %d, want %d", i, got, want)
		}
	}
	if got := wf.Map.Template[0].OnFailure.MaxAttempts; got != 3 {
		t.Errorf("the agent's step: max_attempts %d, want 3", got)
	}
	for i, s := range wf.Reduce {
		if s.OnFailure.MaxAttempts != 0 || s.OnFailure.FailWorkflow {
			t.Errorf("reduce step %d loops: %+v", i, s.OnFailure)
		}
	}
	var warnings []string
	for _, w := range wf.Warnings {
		warnings = append(warnings, w.Error())
	}
	want := []string{
		"w.yml:23:34: warning: on_failure.max_attempts has no effect in reduce: there the handler runs once and the phase goes on if it succeeds (as in Prodigy's reduce)",
		"w.yml:23:51: warning: on_failure.fail_workflow: true has no effect in reduce: there the handler runs once and the phase goes on if it succeeds (as in Prodigy's reduce)",
	}
	if strings.Join(warnings, "\n") != strings.Join(want, "\n") {
		t.Errorf("warnings\n%s\nwant\n%s", strings.Join(warnings, "\n"), strings.Join(want, "\n"))
	}
}

// on_success and on_exit_code take a command, a list, {commands: [...]},
// or a step with every step key, nested handlers included; each of their
// steps has a key of its own for events.
func TestParseSuccessHandlers(t *testing.T) {
	wf, err := Parse("w.yml", []byte(`
- shell: cargo check
  on_success:
    shell: cargo build
    timeout: 60
    on_success:
      shell: cargo test
      on_failure: {claude: /fix}
- id: bench
  shell: cargo bench
  on_exit_code:
    0: echo done
    101:
      - echo failed
      - claude: /fix-compilation
- name: deploy
  shell: deploy
  on_success:
    commands: [notify, {shell: archive, id: archived}]
`))
	if err != nil {
		t.Fatal(err)
	}
	check := wf.Steps[0]
	if len(check.OnSuccess) != 1 || check.OnSuccess[0].Timeout == 0 || len(check.OnSuccess[0].OnSuccess) != 1 {
		t.Fatalf("nested on_success not read: %+v", check.OnSuccess)
	}
	inner := check.OnSuccess[0].OnSuccess[0]
	if inner.OnFailure.Action != FailHandler || inner.Command.Text.String() != "cargo test" {
		t.Errorf("the innermost step: %q with on_failure %+v", inner.Command.Text.String(), inner.OnFailure)
	}
	bench := wf.Steps[1]
	deploy := wf.Steps[2].OnSuccess
	for _, tt := range []struct {
		step    *Step
		key     string
		command string
	}{
		{check.OnSuccess[0], "step-1.on_success", "cargo build"},
		{inner, "step-1.on_success.on_success", "cargo test"},
		{bench.OnExitCode[0][0], "bench.on_exit_code.0", "echo done"},
		{bench.OnExitCode[101][0], "bench.on_exit_code.101[0]", "echo failed"},
		{bench.OnExitCode[101][1], "bench.on_exit_code.101[1]", "/fix-compilation"},
		{deploy[0], "deploy.on_success[0]", "notify"},
		{deploy[1], "archived", "archive"},
	} {
		if tt.step.Key() != tt.key || tt.step.Command.Text.String() != tt.command {
			t.Errorf("step %q (%q), want %q (%q)", tt.step.Key(), tt.step.Command.Text.String(), tt.key, tt.command)
		}
	}
	if k := bench.OnExitCode[101][1].Command.Kind; k != ClaudeCommand {
		t.Errorf("{claude: ...} in a handler list is a %s command", k)
	}
	if len(bench.OnExitCode) != 2 {
		t.Errorf("on_exit_code has %d codes, want 2", len(bench.OnExitCode))
	}
}

func TestParseHandlerErrors(t *testing.T) {
	tests := []struct {
		name, src string
		want      string // "LINE:COL: substring of the message"
	}{
		{"max_attempts zero", "- shell: x\n  on_failure: {shell: y, max_attempts: 0}\n", `2:40: on_failure.max_attempts must be at least 1, not 0`},
		{"max_attempts string", "- shell: x\n  on_failure:\n    shell: y\n    max_attempts: three\n", `4:19: on_failure.max_attempts must be a whole number, not "three"`},
		{"max_attempts and max_retries", "- shell: x\n  on_failure: {shell: y, max_attempts: 2, max_retries: 2}\n", `2:43: "max_attempts" and "max_retries" mean the same; write only one`},
		{"handler commit_required", "- shell: x\n  on_failure: {shell: y, commit_required: maybe}\n", `2:43: on_failure.commit_required must be true or false, not "maybe"`},
		{"max_attempts without a handler", "- shell: x\n  on_failure: {max_attempts: 3}\n", `2:15: on_failure needs shell, claude or commands`},
		{"exit code not a number", "- shell: x\n  on_exit_code: {ok: echo}\n", `2:18: on_exit_code: "ok" is not an exit code (a whole number from 0 to 255)`},
		{"exit code out of range", "- shell: x\n  on_exit_code:\n    256: echo\n", `3:5: on_exit_code: "256" is not an exit code`},
		{"on_exit_code a list", "- shell: x\n  on_exit_code: [echo]\n", `2:17: on_exit_code must be a mapping of exit codes to handlers`},
		{"empty on_success list", "- shell: x\n  on_success: []\n", `2:15: commands[0].on_success: empty list of commands`},
		{"empty on_success command", "- shell: x\n  on_success: ' '\n", `2:15: commands[0].on_success: empty command`},
		{"on_success unknown key", "- shell: x\n  on_success: {shell: y, shel: z}\n", `2:26: unknown key "shel" in step commands[0].on_success (did you mean "shell"?)`},
		{"nested handler step", "- shell: x\n  on_success:\n    shell: y\n    on_exit_code: {1: {timeout: 5}}\n", `4:23: step commands[0].on_success.on_exit_code.1 has no command: give it shell or claude`},
		{"on_exit_code reads its own step", "- id: a\n  shell: x\n  on_exit_code: {0: 'echo ${steps.a.output}'}\n", `3:21: shell: steps.a is not set here: a step's own steps.ID is set only once it has succeeded`},
		{"on_success commands with more keys", "- shell: x\n  on_success: {commands: [y], command: 5}\n", `2:31: unknown key "command" in commands[0].on_success (did you mean "commands"?)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			errs := parseErr(t, "w.yml", tt.src)
			for _, e := range errs {
				if strings.Contains(e, tt.want) {
					return
				}
			}
			t.Errorf("want an error containing\n  %s\ngot\n  %s", tt.want, strings.Join(errs, "\n  "))
		})
	}
}

// A map whose steps change the repository only in a handler (a claude:
// fixer, a handler that must commit, a claude: step in on_success or
// on_exit_code) runs its items in worktrees by default too.
func TestParseIsolationSeesHandlers(t *testing.T) {
	for _, step := range []string{
		"{shell: test, on_failure: {claude: /fix, max_attempts: 2}}",
		"{shell: test, on_failure: {shell: fix, commit_required: true}}",
		"{shell: test, on_success: {shell: x, on_success: [{claude: /doc}]}}",
		"{shell: test, on_exit_code: {1: [{claude: /fix}]}}",
	} {
		wf, err := Parse("m.yml", []byte("mode: mapreduce\nmap: {input: x, agent_template: ["+step+"]}\n"))
		if err != nil {
			t.Fatalf("%s: %v", step, err)
		}
		if wf.Map.Isolation != IsolationWorktree {
			t.Errorf("%s: isolation %q, want worktree", step, wf.Map.Isolation)
		}
	}
}

// An on_failure handler runs once its step ran, and may read the step's
// own variables (Prodigy's "/fix-failing-tests '${test.output}'").
func TestFailureHandlerReadsItsStep(t *testing.T) {
	src := "- id: test\n  shell: cargo test\n  on_failure:\n    claude: \"/fix-failing-tests '${test.output}'\"\n    max_attempts: 3\n"
	if _, err := Parse("w.yml", []byte(src)); err != nil {
		t.Fatal(err)
	}
}
