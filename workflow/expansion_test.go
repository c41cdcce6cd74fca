package workflow

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/runnerdev/runner/internal/testkit"
)

// An alias inside the value it names, anywhere (a step's handlers, a
// foreach's do, a merge key, env), and a file whose aliases expand it
// too far, each is one error at the alias or the value, found before the
// decoder reads a value; the test's heap is bounded, so that a
// regression fails rather than takes the machine's memory.
func TestExpansionIsBounded(t *testing.T) {
	testkit.BoundHeap(t, 1<<30)
	var chain strings.Builder // a step whose on_success holds the next, 600 deep
	for i := range 600 {
		fmt.Fprintf(&chain, "%s- shell: s%d\n%s  on_success:\n", strings.Repeat("    ", i), i, strings.Repeat("    ", i))
	}
	chain.WriteString(strings.Repeat("    ", 600) + "- shell: last\n")
	tests := []struct{ name, src, want string }{
		{"on_success", "commands: &c [{shell: x, on_success: *c}]\n",
			"1:38: alias *c is inside the value it names (&c at line 1): a cycle that never ends"},
		{"on_failure", "- &s {shell: x, on_failure: {shell: y, on_success: *s}}\n",
			"1:52: alias *s is inside the value it names (&s at line 1): a cycle that never ends"},
		{"foreach", "commands: &c [{shell: x, foreach: {input: [a], do: *c}}]\n",
			"1:52: alias *c is inside the value it names (&c at line 1): a cycle that never ends"},
		{"merge key", "env: &e {<<: *e, A: b}\ncommands: [{shell: x}]\n",
			"1:14: alias *e is inside the value it names (&e at line 1): a cycle that never ends"},
		{"billion laughs", aliasBomb, "6:4: this value expands to more than 200000 values through its aliases (an alias bomb?)"},
		{"fan-out", aliasFanOut(), "2:11: this value expands to more than 200000 values through its aliases (an alias bomb?)"},
		{"deep", chain.String(), "511:1023: values nest more than 512 levels deep here (through aliases?)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if errs := parseErr(t, "w.yml", tt.src); !slices.Equal(errs, []string{tt.want}) {
				t.Errorf("errors\n  %s\nwant\n  %s", strings.Join(errs, "\n  "), tt.want)
			}
		})
	}
}

// Aliases that expand within the bounds are followed, each as often as
// it is named.
func TestAliasesExpand(t *testing.T) {
	wf, err := Parse("w.yml", []byte("x: &s {shell: echo hi}\ncommands: [*s, *s, {shell: b, on_success: *s}]\n"))
	if err != nil {
		t.Fatal(err)
	}
	if len(wf.Steps) != 3 || wf.Steps[2].OnSuccess == nil {
		t.Fatalf("steps %+v", wf.Steps)
	}
}
