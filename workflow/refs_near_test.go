package workflow

import (
	"slices"
	"strings"
	"testing"
)

// warningsOf parses a valid file and returns its warnings as
// "LINE:COL: message" lines.
func warningsOf(t *testing.T, src string) []string {
	t.Helper()
	wf, err := Parse("w.yml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, w := range wf.Warnings {
		out = append(out, strings.TrimPrefix(w.Error(), "w.yml:"))
	}
	return out
}

// A name one edit (or one swap of two letters) from a defined one, or
// from the names runner gives items, warns with did-you-mean, in values
// and in conditions; names far from any, defined names and the names of
// conditions' namespaces and functions do not.
func TestNearNames(t *testing.T) {
	tests := []struct{ name, src, want string }{
		{"swap in a map template", "mode: mapreduce\nmap:\n  input: i.txt\n  agent_template:\n    - shell: echo ${itme}\n",
			"5:14: warning: ${itme} is not defined by the workflow, its env files or profiles, so it expands to nothing (did you mean ${item}?)"},
		{"swap in env", "env: {BUILD_DIR: x}\ncommands:\n  - shell: echo ${BUILD_DRI}\n",
			"3:12: warning: ${BUILD_DRI} is not defined by the workflow, its env files or profiles, so it expands to nothing (did you mean ${BUILD_DIR}?)"},
		{"condition", "- {shell: x, capture_output: RESULT}\n- {shell: y, when: 'RESULT_ != \"\"'}\n",
			"2:21: warning: RESULT_ is not defined by the workflow, its env files or profiles, so it is nil in the condition (did you mean RESULT?)"},
		{"far", "env: {BUILD_DIR: x}\ncommands:\n  - shell: echo ${OTHER}\n", ""},
		{"condition's own names", "- {shell: x, capture_output: outputs}\n- {shell: y, when: 'steps != nil && len(\"a\") > 0', repeat: {until: 'output == \"x\"', max_attempts: 2}}\n", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := warningsOf(t, tt.src)
			var want []string
			if tt.want != "" {
				want = []string{tt.want}
			}
			if !slices.Equal(got, want) {
				t.Errorf("warnings\n  %s\nwant\n  %s", strings.Join(got, "\n  "), tt.want)
			}
		})
	}
}

// A value runner inserts among the words of a shell for loop warns and
// names |raw; a name the workflow does not define is the shell's.
func TestForLoopWords(t *testing.T) {
	got := warningsOf(t, "env: {LIST: a b}\ncommands:\n  - shell: for x in ${LIST} ${HOME}; do echo $x; done\n  - on_failure: 'for y in $LIST; do :; done'\n    shell: x\n")
	want := []string{
		"3:21: warning: ${LIST} is inserted as one word (runner quotes a value for the shell), so this for loop runs once with the whole value; to loop over its words write ${LIST|raw}, unescaped, which the shell splits",
		"4:27: warning: $LIST is inserted as one word (runner quotes a value for the shell), so this for loop runs once with the whole value; to loop over its words write ${LIST|raw}, unescaped, which the shell splits",
	}
	if !slices.Equal(got, want) {
		t.Errorf("warnings\n  %s\nwant\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
}
