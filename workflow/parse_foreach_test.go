package workflow

import (
	"slices"
	"strings"
	"testing"
)

func TestParseForeach(t *testing.T) {
	wf, err := Parse("w.yml", []byte(`
- id: files
  foreach:
    foreach: "find . -name '*.go'"
    parallel: 3
    continue_on_error: true
    max_items: 5
    do:
      - shell: gofmt -l ${item}
      - id: nested
        foreach:
          items: [a, 1, true]
          parallel: true
          do:
            - claude: /fix ${item}
- foreach: {foreach: [x], parallel: false, do: [{shell: "echo ${index}"}]}
`))
	if err != nil {
		t.Fatal(err)
	}
	s := wf.Steps[0]
	f := s.Foreach
	if s.Command.Kind != ForeachCommand || f == nil || f.Items != nil || s.Command.Text.String() != "find . -name '*.go'" {
		t.Fatalf("step 0: command %+v, foreach %+v", s.Command, f)
	}
	if f.Parallel != 3 || !f.ContinueOnError || f.MaxItems != 5 || len(f.Do) != 2 {
		t.Errorf("step 0: %+v", f)
	}
	inner := f.Do[1].Foreach
	if inner == nil || !slices.Equal(inner.Items, []string{"a", "1", "true"}) || inner.Parallel != ForeachDefaultParallel {
		t.Errorf("nested foreach: %+v", inner)
	}
	if last := wf.Steps[1].Foreach; last.Parallel != 1 || last.ContinueOnError || last.MaxItems != 0 {
		t.Errorf("step 1: %+v", last)
	}
	if got, want := s.CommandText(), "foreach: find . -name '*.go'"; got != want {
		t.Errorf("CommandText %q, want %q", got, want)
	}
	if got, want := f.Do[1].CommandText(), `foreach: ["a", "1", "true"]`; got != want {
		t.Errorf("CommandText %q, want %q", got, want)
	}
	if got, want := wf.Steps[1].Label(PhaseCommands), "step 2"; got != want {
		t.Errorf("Label %q, want %q", got, want)
	}
	var keys []string
	for s := range AllSteps(wf.Steps) {
		keys = append(keys, s.Key()+":"+string(s.Command.Kind))
	}
	if want := []string{"files:foreach", "step-1:shell", "nested:foreach", "step-1:claude", "step-2:foreach", "step-1:shell"}; !slices.Equal(keys, want) {
		t.Errorf("AllSteps: %v, want %v", keys, want)
	}
}

// A claude: step in a foreach of the agent template changes the
// repository as one outside it would: items get worktrees by default.
func TestParseForeachIsolation(t *testing.T) {
	wf, err := Parse("w.yml", []byte(`mode: mapreduce
map:
  input: items.json
  agent_template:
    - foreach: {foreach: [a, b], do: [{claude: "/fix ${item}"}]}
`))
	if err != nil {
		t.Fatal(err)
	}
	if wf.Map.Isolation != IsolationWorktree {
		t.Errorf("isolation %q, want worktree", wf.Map.Isolation)
	}
}

// Each mistake in a foreach is one error, at its position.
func TestParseForeachErrors(t *testing.T) {
	for _, tt := range []struct {
		name, src string
		want      []string
	}{
		{"missing do", "- foreach: {foreach: [a]}\n",
			[]string{`1:12: foreach needs do: the steps to run for each item`}},
		{"empty do", "- foreach: {foreach: [a], do: []}\n",
			[]string{`1:31: commands[0].foreach.do is empty: nothing to run`}},
		{"missing items", "- foreach:\n    do: [{shell: x}]\n",
			[]string{`2:5: foreach needs foreach: the items, a list or a shell command that prints one item per line`}},
		{"both spellings", "- foreach: {foreach: [a], items: [b], do: [{shell: x}]}\n",
			[]string{`1:27: "foreach" and "items" mean the same; write only one`}},
		{"empty command", "- foreach: {foreach: ' ', do: [{shell: x}]}\n",
			[]string{`1:22: foreach.foreach is empty: give a list of items or a shell command that prints them`}},
		{"item not a string", "- foreach: {foreach: [a, {b: c}], do: [{shell: x}]}\n",
			[]string{`1:26: foreach.foreach[1] must be a string, not a mapping`}},
		{"parallel zero", "- foreach: {foreach: [a], parallel: 0, do: [{shell: x}]}\n",
			[]string{`1:37: foreach.parallel must be at least 1, not 0`}},
		{"parallel word", "- foreach: {foreach: [a], parallel: many, do: [{shell: x}]}\n",
			[]string{`1:37: foreach.parallel must be true, false or how many items run at once, not "many"`}},
		{"max_items negative", "- foreach: {foreach: [a], max_items: -1, do: [{shell: x}]}\n",
			[]string{`1:38: foreach.max_items must be at least 1, not -1`}},
		{"continue_on_error word", "- foreach: {foreach: [a], continue_on_error: yes please, do: [{shell: x}]}\n",
			[]string{`1:46: foreach.continue_on_error must be true or false, not "yes please"`}},
		{"foreach and shell", "- shell: y\n  foreach: {foreach: [a], do: [{shell: x}]}\n",
			[]string{`1:3: shell does not apply to a foreach step, which runs the steps of its do: move it into do, or make it a step of its own`}},
		{"env on foreach", "- foreach: {foreach: [a], do: [{shell: x}]}\n  env: {A: b}\n",
			[]string{`2:3: env does not apply to a foreach step, which runs the steps of its do: set it on those steps, or in the workflow's env`}},
		{"capture on foreach", "- foreach: {foreach: [a], do: [{shell: x}]}\n  capture_output: out\n",
			[]string{`2:3: capture_output does not apply to a foreach step, which runs the steps of its do: capture in those steps, or give the foreach an id and read ${steps.ID.output}, what they printed`}},
		{"not a mapping", "- foreach: [a, b]\n",
			[]string{`1:12: foreach must be a mapping such as {foreach: [a, b], do: [{shell: ...}]}, not a list`}},
		{"unknown key", "- foreach: {foreach: [a], paralel: 2, do: [{shell: x}]}\n",
			[]string{`1:27: unknown key "paralel" in foreach (did you mean "parallel"?)`}},
		{"do step error", "- foreach:\n    foreach: [a]\n    do:\n      - shel: x\n",
			[]string{`4:9: unknown key "shel" in step commands[0].foreach.do[0] (did you mean "shell"?)`}},
		{"duplicate id", "- id: a\n  shell: x\n- foreach:\n    foreach: [a]\n    do: [{id: a, shell: y}]\n",
			[]string{`5:15: id "a" is already used by the step at line 1`}},
		{"a loop in itself", "- foreach: &a {foreach: [a], do: [{foreach: *a}]}\n",
			[]string{`1:45: alias *a is inside the value it names (&a at line 1): a cycle that never ends`}},
		{"loops nested too deep", "- " + strings.Repeat("{foreach: {foreach: [a], do: [", 9) + "{shell: x}" + strings.Repeat("]}}", 9) + "\n",
			[]string{`1:244: foreach: loops nest at most 8 deep`}},
		{"commit_required in parallel", "- foreach:\n    foreach: [a]\n    parallel: 2\n    do:\n      - claude: /fix\n        commit_required: true\n",
			[]string{`5:9: commit_required and auto_commit cannot be told apart between the items of a parallel foreach (they share one work tree): use parallel: false, or a MapReduce workflow with isolation: worktree`}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := parseErr(t, "w.yml", tt.src); !slices.Equal(got, tt.want) {
				t.Errorf("got\n  %s\nwant\n  %s", strings.Join(got, "\n  "), strings.Join(tt.want, "\n  "))
			}
		})
	}
}

// A do step reads what its foreach step reads and the earlier steps of
// its own do; what a do step sets is not visible outside its item.
func TestParseForeachRefs(t *testing.T) {
	const head = "- id: before\n  shell: x\n- id: loop\n  foreach:\n    foreach: [a]\n    do:\n"
	for _, tt := range []struct {
		name, src, want string // want "": valid
	}{
		{"earlier outer step", head + "      - shell: echo ${steps.before.output}\n", ""},
		{"earlier do step", head + "      - {id: one, shell: x}\n      - shell: echo ${steps.one.output}\n", ""},
		{"setup from a do step of map", "mode: mapreduce\nsetup: [{id: s, shell: x}]\nmap:\n  input: i.json\n  agent_template:\n    - foreach: {foreach: [a], do: [{shell: \"echo ${steps.s.output}\"}]}\n", ""},
		{"nested foreach reads outer do", head + "      - {id: one, shell: x}\n      - foreach: {foreach: [b], do: [{shell: \"echo ${steps.one.output}\"}]}\n", ""},
		{"later do step", head + "      - shell: echo ${steps.two.output}\n      - {id: two, shell: x}\n",
			`7:16: shell: steps.two is not set here: that step runs later (line 8)`},
		{"the foreach itself", head + "      - shell: echo ${steps.loop.output}\n",
			`7:16: shell: steps.loop is not set here: a step's own steps.ID is set only once it has succeeded (line 3)`},
		{"later outer step", head + "      - shell: echo ${steps.after.output}\n- {id: after, shell: x}\n",
			`7:16: shell: steps.after is not set here: that step runs later (line 8)`},
		{"do step from outside", head + "      - {id: one, shell: x}\n- shell: echo ${steps.one.output}\n",
			`8:10: shell: steps.one is not set here: it is a step of a foreach's do, set for the later steps of the same do only (line 7)`},
		{"do step from another foreach", head + "      - {id: one, shell: x}\n- foreach: {foreach: [b], do: [{shell: \"echo ${steps.one.output}\"}]}\n",
			`8:40: shell: steps.one is not set here: it is a step of a foreach's do, set for the later steps of the same do only (line 7)`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := parseErr(t, "w.yml", tt.src)
			if tt.want == "" && got != nil || tt.want != "" && !slices.Equal(got, []string{tt.want}) {
				t.Errorf("got\n  %s\nwant\n  %s", strings.Join(got, "\n  "), tt.want)
			}
		})
	}
}
