package executor

import (
	"slices"
	"strings"
	"testing"

	"github.com/runnerdev/runner/workflow"
)

func TestSplitWords(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{"claude --print", []string{"claude", "--print"}},
		{"  a \t b\n c  ", []string{"a", "b", "c"}},
		{`my-agent --model 'opus 4' --note "it's \"quoted\""`, []string{"my-agent", "--model", "opus 4", "--note", `it's "quoted"`}},
		{`a\ b c\\d \'e`, []string{"a b", `c\d`, "'e"}},
		{`'' "" x`, []string{"", "", "x"}},
		{`pre'mid'"dle"post`, []string{"premiddlepost"}},
		{`"a\nb \q \$ \` + "`" + `"`, []string{`a\nb \q $ ` + "`"}},
		{"$HOME $(rm -rf x) `id` *.go ~ a=b", []string{"$HOME", "$(rm", "-rf", "x)", "`id`", "*.go", "~", "a=b"}},
		{"a\\\nb \"c\\\nd\"", []string{"ab", "cd"}},
		{"", nil},
	} {
		got, err := splitWords(tc.in)
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("splitWords(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
	for in, want := range map[string]string{
		`a 'b`:   "unterminated single quote",
		`a "b\"`: "unterminated double quote",
		`a b\`:   "ends with a backslash",
	} {
		if _, err := splitWords(in); err == nil || err.Error() != want {
			t.Errorf("splitWords(%q): error %v, want %q", in, err, want)
		}
	}
}

// Agent.String quotes words so that splitWords reads them back.
func TestAgentStringRoundTrips(t *testing.T) {
	words := []string{"my agent", "--flag=x", "it's", "", "$HOME", "plain"}
	a := Agent{Command: words}
	got, err := splitWords(a.String())
	if err != nil || !slices.Equal(got, words) {
		t.Errorf("%s -> %q, %v", a, got, err)
	}
}

func TestResolveAgent(t *testing.T) {
	env := []string{"RUNNER_AGENT_COMMAND=first", "RUNNER_AGENT_COMMAND=my-agent --model 'a b'"}
	for _, tc := range []struct {
		name    string
		wf      *workflow.Agent
		environ []string
		want    []string
		from    string
		err     string
	}{
		{"workflow first", &workflow.Agent{Command: []string{"x", "--y"}}, env, []string{"x", "--y"}, AgentFromWorkflow, ""},
		{"environment, last entry", &workflow.Agent{}, env, []string{"my-agent", "--model", "a b"}, AgentFromEnv, ""},
		{"default", nil, []string{"RUNNER_AGENT_COMMAND=  "}, DefaultAgentCommand, AgentFromDefault, ""},
		{"bad environment", nil, []string{"RUNNER_AGENT_COMMAND=a 'b"}, nil, AgentFromEnv, "RUNNER_AGENT_COMMAND: unterminated single quote"},
	} {
		a := ResolveAgent(tc.wf, tc.environ)
		if !slices.Equal(a.Command, tc.want) || a.From != tc.from || tc.err == "" && a.Err != nil || tc.err != "" && (a.Err == nil || a.Err.Error() != tc.err) {
			t.Errorf("%s: got %q from %s (err %v), want %q from %s (err %q)", tc.name, a.Command, a.From, a.Err, tc.want, tc.from, tc.err)
		}
	}
	if o := ResolveAgent(nil, nil).origin(); !strings.Contains(o, "agent.command") || !strings.Contains(o, AgentCommandVar) {
		t.Errorf("the default's origin names neither way to change it: %s", o)
	}
}

// A claude: step whose agent program is missing fails as spawn, and the
// message says which command was looked for and how to choose another;
// PATH is an empty directory, so no real agent can be found.
func TestMissingAgentProgram(t *testing.T) {
	wf, err := workflow.Parse("a.yml", []byte("- claude: /fix\n"))
	if err != nil {
		t.Fatal(err)
	}
	x := &Executor{Env: []string{"PATH=" + t.TempDir()}, TmpDir: t.TempDir()}
	res := x.RunStep(t.Context(), wf.Steps[0], Run{Scope: NewScope(nil, nil)})
	want := `step "step 1" failed: cannot start: "claude": not found in PATH (agent command claude --print, runner's default: install it, or name another program with agent.command in the workflow or RUNNER_AGENT_COMMAND)`
	if res.Status != StepFailed || res.Outcome.Kind != "spawn" || res.Err == nil || res.Err.Error() != want {
		t.Errorf("status %s kind %q err %v\nwant %s", res.Status, res.Outcome.Kind, res.Err, want)
	}
}
