package workflow

import (
	"strings"
	"testing"
	"time"
)

// Prodigy's accepted forms: description (of a step and of the workflow),
// steps: for commands:, commands: [], error_collection: batched:N.
func TestProdigyForms(t *testing.T) {
	wf, err := Parse("w.yml", []byte(`
description: Shows the forms
steps:
  - shell: echo a
    description: "Save baseline for comparison"
  - shell: echo b
    name: named
    description: a longer label
  - shell: echo c
    commit_required: false
`))
	if err != nil {
		t.Fatal(err)
	}
	if wf.Description != "Shows the forms" || len(wf.Steps) != 3 {
		t.Fatalf("description %q, %d steps", wf.Description, len(wf.Steps))
	}
	if s := wf.Steps[0]; s.Label(PhaseCommands) != "Save baseline for comparison" || s.Key() != "Save baseline for comparison" {
		t.Errorf("a described step shows as %q (key %q)", s.Label(PhaseCommands), s.Key())
	}
	if s := wf.Steps[1]; s.Label(PhaseCommands) != "named" {
		t.Errorf("a named and described step shows as %q, want its name", s.Label(PhaseCommands))
	}
	if wf.Steps[2].CommitRequired {
		t.Error("commit_required: false is set")
	}

	empty, err := Parse("w.yml", []byte("commands: []\n"))
	if err != nil || len(empty.Steps) != 0 {
		t.Errorf("commands: [] = %v, %v; want no steps", empty, err)
	}

	for _, src := range []string{"error_collection: batched:7", "error_collection: 'batched: 7'", "error_collection: {batched: 7}", "error_policy: {error_collection: {batched: {size: 7}}}"} {
		mr, err := Parse("w.yml", []byte("mode: mapreduce\nmap: {input: x, agent_template: [{shell: x}]}\n"+src+"\n"))
		if err != nil {
			t.Errorf("%s: %v", src, err)
			continue
		}
		if c := mr.ErrorPolicy.Collection; c.Mode != "batched" || c.BatchSize != 7 {
			t.Errorf("%s = %+v, want batched every 7", src, c)
		}
	}
}

// Prodigy's legacy structured-command fields: options and args that repeat
// the claude text, metadata as the old spelling of step keys.
func TestLegacyFields(t *testing.T) {
	wf, err := Parse("w.yml", []byte(`
- claude: "/enhance --area 'cli-ux' --max=8 --fix $SPEC_ID"
  options: {area: cli-ux, max: 8, fix: true, dry-run: false}
  args: ["$SPEC_ID"]
  metadata:
    continue_on_error: true
    timeout: 90
    retries: 2
    env: {LEVEL: "3"}
    commit_required: true
- claude: /lint
  metadata: {continue_on_error: false}
`))
	if err != nil {
		t.Fatal(err)
	}
	s := wf.Steps[0]
	if s.OnFailure.Action != FailContinue || s.Timeout != 90*time.Second || !s.CommitRequired {
		t.Errorf("metadata gave on_failure %s, timeout %v, commit_required %v", s.OnFailure.Action, s.Timeout, s.CommitRequired)
	}
	if len(s.Retry) != 1 || s.Retry[0].Attempts != 3 {
		t.Errorf("metadata.retries: 2 gave %+v, want one policy of 3 attempts", s.Retry)
	}
	if len(s.Env) != 1 || s.Env[0].Name != "LEVEL" {
		t.Errorf("metadata.env gave %+v", s.Env)
	}
	if wf.Steps[1].OnFailure.Action != FailStop {
		t.Errorf("continue_on_error: false gave %s", wf.Steps[1].OnFailure.Action)
	}

	for _, tt := range []struct{ src, want string }{
		{"- claude: /enhance --area cli\n  options: {area: ux}\n", `2:13: options.area: runner runs the claude text as written and adds no flags to it; write --area ux in the text`},
		{"- claude: /enhance\n  options: {fix: true}\n", `2:13: options.fix: runner runs the claude text as written and adds no flags to it; write --fix in the text`},
		{"- claude: /enhance --fix\n  options: {fix: false}\n", `2:13: options.fix: runner runs the claude text as written and adds no flags to it; write no --fix in the text`},
		{"- claude: /enhance\n  options: {a: [1]}\n", `2:16: options.a must be a string, number or boolean, not a list`},
		{"- claude: /implement\n  args: [$SPEC_ID]\n", `2:10: args[0]: runner runs the claude text as written and adds no arguments to it; write $SPEC_ID in the text`},
		{"- shell: make\n  args: [x]\n", `2:3: args belongs to a claude: step`},
		{"- claude: /x\n  metadata: {continue_on_error: true}\n  on_failure: true\n", `2:14: metadata.continue_on_error is Prodigy's old spelling of on_failure, which this step also sets; keep one`},
		{"- claude: /x\n  metadata: {timeout: 5}\n  timeout: 6\n", `2:14: metadata.timeout is Prodigy's old spelling of timeout`},
		{"- claude: /x\n  metadata: {retries: 1}\n  retry_config: {attempts: 2}\n", `2:14: metadata.retries is Prodigy's old spelling of retry_config`},
		{"- claude: /x\n  metadata: {retries: -1}\n", `2:23: metadata.retries must be at least 0, not -1`},
		{"- shell: x\n  description: [a]\n", `2:16: description must be a string, not a list`},
		{"mode: mapreduce\nmap: {input: x, agent_template: [{shell: x}]}\nerror_collection: batched:0\n", `3:19: error_collection: "batched:0" needs a batch size of at least 1, such as batched:10`},
		{"mode: mapreduce\nmap: {input: x, agent_template: [{shell: x}]}\nerror_collection: {batched: 0}\n", `3:29: error_collection.batched must be at least 1, not 0`},
		{"commands: [{shell: a}]\nsteps: [{shell: b}]\n", `2:1: "commands" and "steps" mean the same; write only one`},
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

// output_file belongs to a step that runs a command.
func TestOutputFileErrors(t *testing.T) {
	for src, want := range map[string]string{
		"- shell: x\n  output_file: ' '\n":                                    `2:16: output_file is empty`,
		"- write_file: {path: a, content: b}\n  output_file: o.txt\n":         `2:3: output_file receives a command's stdout: it belongs to a shell: or claude: step, not a write_file step`,
		"- foreach: {foreach: [a], do: [{shell: x}]}\n  output_file: o.txt\n": `2:3: output_file receives a command's stdout: it belongs to a shell: or claude: step, not a foreach step`,
	} {
		_, err := Parse("w.yml", []byte(src))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %s", src, err, want)
		}
	}
}

// allow_failure: true and fail_workflow: false are Prodigy's spellings of
// on_failure: continue, and output: PATH declares the file a step writes.
func TestAllowFailureAndOutput(t *testing.T) {
	wf, err := Parse("w.yml", []byte(`
- shell: cargo test
  allow_failure: true
- shell: cargo build
  allow_failure: false
  on_failure: {shell: make clean}
- shell: echo x > ${dir}/out.txt
  output: "${dir}/out.txt"
- shell: ./quality-gate
  fail_workflow: false
- shell: ./quality-gate
  fail_workflow: true
`))
	if err != nil {
		t.Fatal(err)
	}
	if got := wf.Steps[0].OnFailure.Action; got != FailContinue {
		t.Errorf("allow_failure: true gave on_failure %s, want continue", got)
	}
	if got := wf.Steps[1].OnFailure; got.Action != FailHandler || len(got.Commands) != 1 {
		t.Errorf("allow_failure: false changed on_failure to %+v", got)
	}
	if got := wf.Steps[3].OnFailure.Action; got != FailContinue {
		t.Errorf("fail_workflow: false gave on_failure %s, want continue", got)
	}
	if got := wf.Steps[4].OnFailure.Action; got != FailStop {
		t.Errorf("fail_workflow: true gave on_failure %s, want stop", got)
	}
	if wf.Steps[0].Output != nil || wf.Steps[2].Output.String() != "${dir}/out.txt" {
		t.Errorf("output gave %v and %v", wf.Steps[0].Output, wf.Steps[2].Output)
	}

	for _, tt := range []struct{ src, want string }{
		{"- shell: x\n  allow_failure: true\n  on_failure: continue\n", `2:3: allow_failure: true is Prodigy's spelling of on_failure: continue, and this step also sets on_failure; keep one`},
		{"- shell: x\n  allow_failure: true\n  retry_config: {attempts: 2, on_failure: stop}\n", `2:3: allow_failure: true is Prodigy's spelling of on_failure: continue, and this step also sets on_failure`},
		{"- claude: /x\n  allow_failure: true\n  metadata: {continue_on_error: true}\n", `3:14: metadata.continue_on_error is Prodigy's old spelling of on_failure, which this step also sets; keep one`},
		{"- shell: x\n  on_failure: {claude: /fix, max_attempts: 3}\n  fail_workflow: false\n", `3:3: fail_workflow: false is Prodigy's spelling of on_failure: continue, and this step also sets on_failure; keep one`},
		{"- shell: x\n  allow_failure: sometimes\n", `2:18: allow_failure must be true or false, not "sometimes"`},
		{"- shell: x\n  output: [a]\n", `2:11: output must be a string, not a list`},
		{"- shell: x\n  output: \" \"\n", `2:11: output: needs the path of the file the step writes`},
		{"- shell: x\n  output: ${nope.output}/a\n", `nope`},
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
