package workflow

import (
	"slices"
	"strings"
	"testing"
)

// A parallel: block's steps are the phase's steps, numbered on from the
// block's place, each pointing at its block; the steps after it number
// on after them.
func TestParseParallel(t *testing.T) {
	wf := mustParse(t, "name: ci\ncommands:\n  - shell: a\n  - parallel:\n      - {name: build, shell: b}\n      - {name: vet, shell: c, capture: v}\n    max_parallel: 1\n    fail_fast: false\n  - shell: echo ${v}\n")
	var got []string
	for _, s := range wf.Steps {
		block := "-"
		if s.Parallel != nil {
			block = s.Parallel.Label(PhaseCommands)
		}
		got = append(got, s.Label(PhaseCommands)+" "+block)
	}
	want := []string{"step 1 -", "build parallel steps 2-3", "vet parallel steps 2-3", "step 4 -"}
	if !slices.Equal(got, want) {
		t.Errorf("steps %q, want %q", got, want)
	}
	p := wf.Steps[1].Parallel
	if p != wf.Steps[2].Parallel || p.MaxParallel != 1 || p.FailFast || p.First != 1 || p.Count != 2 {
		t.Errorf("block %+v", p)
	}
	var groups []int
	for g := range Groups(wf.Steps) {
		groups = append(groups, len(g))
	}
	if !slices.Equal(groups, []int{1, 2, 1}) {
		t.Errorf("groups of %v steps, want 1, 2, 1", groups)
	}
	named := mustParse(t, "mode: mapreduce\nsetup:\n  - parallel: [{shell: a}, {shell: b}]\n    name: prepare\nmap: {input: i.json, agent_template: [{shell: x}]}\n")
	if p := named.Setup[1].Parallel; p == nil || !p.FailFast || p.Label(PhaseSetup) != "prepare" || named.Setup[1].Label(PhaseSetup) != "setup step 2" {
		t.Errorf("setup block %+v", p)
	}
}

// What a parallel: block refuses, where it stands.
func TestParseParallelErrors(t *testing.T) {
	for _, tt := range []struct {
		name, src string
		want      []string
	}{
		{"same capture", "- parallel:\n    - {shell: a, capture: out}\n    - {name: b, shell: b, capture: out}\n",
			[]string{`3:27: commands[0].parallel[1]: b captures out as step 1 (line 2) does, and they run at the same time: give each its own name`}},
		{"a sibling's id", "- parallel:\n    - {id: a, shell: a}\n    - {shell: 'echo ${steps.a.output}'}\n",
			[]string{`3:15: shell: steps.a is not set here: it runs at the same time, in the same parallel: block (steps after the block read it) (line 2)`}},
		{"a sibling's capture", "- parallel:\n    - {shell: a, capture: out}\n    - {shell: 'echo ${out}'}\n",
			[]string{`3:15: ${out}: another step of the same parallel: block captures it, and they run at the same time (steps after the block read it)`}},
		{"nested", "- parallel:\n    - parallel: [{shell: a}]\n",
			[]string{`2:7: parallel: blocks do not nest: list every step in the one block`}},
		{"empty", "- parallel: []\n",
			[]string{`1:13: commands[0].parallel is empty: list the steps to run at once`}},
		{"max_parallel zero", "- parallel: [{shell: a}]\n  max_parallel: 0\n",
			[]string{`2:17: commands[0].max_parallel must be at least 1, not 0`}},
		{"fail_fast word", "- parallel: [{shell: a}]\n  fail_fast: sometimes\n",
			[]string{`2:14: commands[0].fail_fast must be true or false, not "sometimes"`}},
		{"in a handler", "- shell: a\n  on_success:\n    - parallel: [{shell: b}]\n",
			[]string{`3:7: parallel: is a form of a phase's steps, not of a handler's: make the handler a step of its own, or put the steps in a parallel: block of the phase`}},
		{"in a foreach", "- foreach: {foreach: [a], do: [{parallel: [{shell: b}]}]}\n",
			[]string{`1:33: parallel: is not allowed in a foreach's do: set the foreach's parallel: to run its items at once`}},
		{"in agent_template", "mode: mapreduce\nmap:\n  input: i.json\n  agent_template:\n    - parallel: [{shell: b}]\n",
			[]string{`5:7: parallel: is not allowed in a map's agent_template: the items already run at once (map.max_parallel); run the steps one after another, or in a foreach with parallel:`}},
		{"commit_required", "- parallel:\n    - {claude: /fix, commit_required: true}\n",
			[]string{`2:7: commit_required and auto_commit cannot be told apart between the steps of a parallel: block (they share one work tree): take the step out of the block`}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := parseErr(t, "w.yml", tt.src); !slices.Equal(got, tt.want) {
				t.Errorf("got\n  %s\nwant\n  %s", strings.Join(got, "\n  "), strings.Join(tt.want, "\n  "))
			}
		})
	}
}
