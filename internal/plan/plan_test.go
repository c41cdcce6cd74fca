package plan

import (
	"strings"
	"testing"
	"time"

	"github.com/runnerdev/runner/internal/executor"
	"github.com/runnerdev/runner/workflow"
)

func parse(t *testing.T, src string) *workflow.Workflow {
	t.Helper()
	wf, err := workflow.Parse("t.yml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return wf
}

// A policy without jitter lists its delays exactly; with jitter and no
// seed they are ranges around a midpoint; with a seed, the delays drawn
// are those of the run, the same for the same seed.
func TestPolicyDelays(t *testing.T) {
	wf := parse(t, `- shell: "true"
  retry_config: {attempts: 3, backoff: {linear: {increment: 2s}}, initial_delay: 1s}
- shell: "true"
  retry_config: {attempts: 2, backoff: fixed, initial_delay: 10s, jitter: true}
`)
	fixed := New(wf, nil, executor.Agent{}).Phases[0].Steps[0].Retry[0]
	if fixed.DelaysAre != delaysFixed || len(fixed.Delays) != 2 ||
		time.Duration(fixed.Delays[0].Delay) != time.Second || time.Duration(fixed.Delays[1].Delay) != 3*time.Second ||
		time.Duration(fixed.Total) != 4*time.Second {
		t.Errorf("linear policy %+v", fixed)
	}
	ranged := New(wf, nil, executor.Agent{}).Phases[0].Steps[1].Retry[0]
	if d := ranged.Delays[0]; ranged.DelaysAre != delaysJittered || d.Min >= d.Max || d.Delay < d.Min || d.Delay > d.Max {
		t.Errorf("jittered policy without a seed %+v", ranged)
	}
	seed := uint64(42)
	a, b := New(wf, &seed, executor.Agent{}).Phases[0].Steps[1].Retry[0], New(wf, &seed, executor.Agent{}).Phases[0].Steps[1].Retry[0]
	if a.DelaysAre != delaysSeeded || a.Delays[0] != b.Delays[0] {
		t.Errorf("seeded policy %+v, again %+v", a, b)
	}
}

// A MapReduce plan has setup, the agent template (whose jitter depends on
// each item, so it stays a range even with a seed) and reduce, and the
// error policy.
func TestMapReducePlan(t *testing.T) {
	wf := parse(t, `mode: mapreduce
setup: [{shell: "true"}]
map:
  input: items.json
  agent_template:
    - shell: "true"
      retry_config: {attempts: 2, initial_delay: 1s, jitter: true}
reduce: [{shell: "true"}]
error_policy: {on_item_failure: skip, max_failures: 3}
`)
	seed := uint64(7)
	p := New(wf, &seed, executor.Agent{})
	var phases []string
	for _, ph := range p.Phases {
		phases = append(phases, ph.Phase)
	}
	if len(phases) != 3 || phases[0] != "setup" || phases[1] != "agent_template" || phases[2] != "reduce" {
		t.Errorf("phases %v", phases)
	}
	if got := p.Phases[1].Steps[0].Retry[0].DelaysAre; got != delaysPerItem {
		t.Errorf("agent_template delays are %q, want %q", got, delaysPerItem)
	}
	if p.Map == nil || p.ErrorPolicy == nil {
		t.Errorf("map %+v, error policy %+v", p.Map, p.ErrorPolicy)
	}
}

// A claude: step's plan names the program it runs and where that came
// from; the commit fields are shown for any step.
func TestAgentAndCommitsPlan(t *testing.T) {
	wf := parse(t, `- claude: /fix
  commit_required: true
- shell: make fmt
  auto_commit: true
`)
	p := New(wf, nil, executor.ResolveAgent(nil, []string{"RUNNER_AGENT_COMMAND=my-agent --model 'a b'"}))
	fix, format := p.Phases[0].Steps[0], p.Phases[0].Steps[1]
	if fix.Kind != workflow.ClaudeCommand || len(fix.Agent) != 3 || fix.AgentFrom != executor.AgentFromEnv || !fix.CommitRequired || fix.AutoCommit {
		t.Errorf("claude step %+v", fix)
	}
	if format.Kind != workflow.ShellCommand || format.Agent != nil || !format.AutoCommit {
		t.Errorf("shell step %+v", format)
	}
	var b strings.Builder
	if err := p.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{
		"     runs: my-agent --model 'a b' with the text as its last argument (RUNNER_AGENT_COMMAND)\n",
		"     commit_required: fails as no_commit unless it makes a git commit\n",
		"     auto_commit: commits what it leaves uncommitted when it made no commit\n",
	} {
		if !strings.Contains(b.String(), line) {
			t.Errorf("plan text lacks %q:\n%s", line, b.String())
		}
	}
}

// A fix-and-retry loop shows how many times the step may run again.
func TestFixLoopPlan(t *testing.T) {
	p := New(parse(t, "- shell: make test\n  on_failure: {shell: make fix, max_attempts: 3}\n- shell: x\n  on_failure: echo\n"), nil, executor.Agent{})
	loop, once := p.Phases[0].Steps[0], p.Phases[0].Steps[1]
	if loop.OnFailure != "handler" || loop.FixAttempts != 3 || once.FixAttempts != 0 {
		t.Errorf("fix loop %q %d, handler once %q %d", loop.OnFailure, loop.FixAttempts, once.OnFailure, once.FixAttempts)
	}
	var b strings.Builder
	if err := p.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{"     on failure: handler, then the step again: up to 3 runs in all\n", "     on failure: handler\n"} {
		if !strings.Contains(b.String(), line) {
			t.Errorf("plan text lacks %q:\n%s", line, b.String())
		}
	}
}

// The plan of a map with isolation: worktree says how the job branch is
// merged when the job succeeds, and shows the merge: block as a phase.
func TestEndPlan(t *testing.T) {
	const head = "mode: mapreduce\nmap: {input: x, agent_template: [{claude: /fix}]}\nreduce: [{shell: r}]\n"
	tests := []struct{ src, want string }{
		{"", "end: when the job succeeds, git merge --no-ff merges the job branch into the branch the job started on, with runner run --merge; otherwise it is left for you to merge\n"},
		{"merge_back: true\n", "end: when the job succeeds, git merge --no-ff merges the job branch into the branch the job started on, always (merge_back: true); otherwise"},
		{"merge: {commands: [{shell: m}], timeout: 90}\n", "merge:\n  1. merge step 1: m\n"},
		{"merge: {commands: [{shell: m}], timeout: 90}\n", "end: when the job succeeds, the merge phase's steps run in the job worktree to merge the job branch (instead of git merge), with runner run --merge; the whole phase times out after 1m30s\n"},
	}
	for _, tt := range tests {
		var out strings.Builder
		if err := New(parse(t, head+tt.src), nil, executor.Agent{}).WriteText(&out); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(out.String(), tt.want) {
			t.Errorf("%q: want %q in\n%s", tt.src, tt.want, out.String())
		}
	}
	var out strings.Builder
	if err := New(parse(t, "mode: mapreduce\nmap: {input: x, agent_template: [{shell: s}]}\n"), nil, executor.Agent{}).WriteText(&out); err != nil || strings.Contains(out.String(), "end:") {
		t.Errorf("without isolation: %v\n%s", err, out.String())
	}
}

// The plan of a setup with a timeout says it bounds the whole phase.
func TestSetupTimeoutPlan(t *testing.T) {
	p := New(parse(t, "mode: mapreduce\nsetup: {commands: [{shell: s}], timeout: 90}\nmap: {input: x, agent_template: [{shell: a}]}\n"), nil, executor.Agent{})
	var out strings.Builder
	if err := p.WriteText(&out); err != nil || !strings.Contains(out.String(), "setup (the whole phase times out after 1m30s):\n  1. setup step 1: s\n") {
		t.Errorf("%v\n%s", err, out.String())
	}
}

// The plan of a workflow with a budget says what each limit stops, and
// has the budget in its JSON; without one, it says nothing of it.
func TestBudgetPlan(t *testing.T) {
	p := New(parse(t, "mode: mapreduce\nmap: {input: x, agent_template: [{claude: a}]}\nbudget: {max_cost_usd: 12.5, item_max_tokens: 9000}\n"), nil, executor.Agent{})
	var out strings.Builder
	if err := p.WriteText(&out); err != nil || !strings.Contains(out.String(), "budget: no item starts once the job's agents spent $12.5; an item whose agents spend over 9000 tokens fails (kind budget)\n") {
		t.Errorf("%v\n%s", err, out.String())
	}
	if p.Budget == nil || *p.Budget != (Budget{MaxCostUSD: 12.5, ItemMaxTokens: 9000}) {
		t.Errorf("budget %+v", p.Budget)
	}
	if p := New(parse(t, "mode: mapreduce\nmap: {input: x, agent_template: [{claude: a}]}\n"), nil, executor.Agent{}); p.Budget != nil {
		t.Errorf("no budget: %+v", p.Budget)
	}
}

// The plan states where items run: the isolation the file sets or the
// default for its agent template, and whether branches are merged.
func TestIsolationPlan(t *testing.T) {
	tests := []struct{ mapKeys, step, want string }{
		{"", `{shell: "true"}`, "  isolation: none: items run in this directory, all in the same checkout (the default)\n"},
		{"", `{claude: /fix}`, "  isolation: worktree: each item runs in a git worktree of its own, on a branch merged into the job branch runner/<job id> when it succeeds (the default for an agent template with a claude: step or commit_required, or a file with merge: or merge_back: true)\n"},
		{"isolation: worktree, merge: none, ", `{shell: "true"}`, "  isolation: worktree: each item runs in a git worktree of its own, on a branch kept unmerged (map.merge: none)\n"},
		{"isolation: none, ", `{claude: /fix}`, "  isolation: none: items run in this directory, all in the same checkout\n"},
	}
	for _, tt := range tests {
		wf := parse(t, "mode: mapreduce\nmap: {input: x, "+tt.mapKeys+"agent_template: ["+tt.step+"]}\n")
		var out strings.Builder
		if err := New(wf, nil, executor.Agent{}).WriteText(&out); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(out.String(), "\n"+tt.want) {
			t.Errorf("map {%s%s}: want the line %q in\n%s", tt.mapKeys, tt.step, tt.want, out.String())
		}
	}
}

// A standard workflow with a merge: block shows its merge phase after its
// commands, and what the end of the job does with the job branch; so does
// one with a claude: step (SPEC §12.7: it runs on a job branch), whose end
// is git merge; a shell-only one has no end.
func TestStandardMergePlan(t *testing.T) {
	p := New(parse(t, "commands: [{claude: /implement}]\nmerge: [{claude: /merge}]\n"), nil, executor.Agent{})
	if len(p.Phases) != 2 || p.Phases[0].Phase != "commands" || p.Phases[1].Phase != "merge" || p.End == nil || !p.End.MergeBlock || p.End.MergeBack {
		t.Errorf("phases %+v, end %+v; want commands and merge, and the merge block on --merge", p.Phases, p.End)
	}
	if p := New(parse(t, "commands: [{claude: /implement}]\n"), nil, executor.Agent{}); p.End == nil || p.End.MergeBlock || len(p.Phases) != 1 {
		t.Errorf("claude: without merge: phases %+v, end %+v; want git merge's end", p.Phases, p.End)
	}
	if p := New(parse(t, "commands: [{shell: make}]\n"), nil, executor.Agent{}); p.End != nil || len(p.Phases) != 1 {
		t.Errorf("shell only: phases %+v, end %+v", p.Phases, p.End)
	}
}

// A validate block's plan says what checks the work, where its result is
// read, and what happens while it is incomplete.
func TestValidatePlan(t *testing.T) {
	wf := parse(t, `- claude: /implement
  validate:
    commands: [{shell: make cov}, {claude: /check}]
    threshold: 75
    on_incomplete: {claude: /fix, max_attempts: 3, fail_workflow: false}
- claude: /validate-all
  validate:
    result_file: out.json
`)
	p := New(wf, nil, executor.Agent{})
	v := p.Phases[0].Steps[0].Validate
	if v == nil || v.Threshold != 75 || v.Checks != 2 || v.ResultFile != "" || v.MaxAttempts != 3 || v.FailWorkflow {
		t.Errorf("validate %+v", v)
	}
	var b strings.Builder
	if err := p.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{
		"     validate: 2 check command(s), result in the last one's stdout; complete at 75%, below it on_incomplete up to 3 attempt(s), then the workflow goes on\n",
		"     validate: the step's own command, result in result_file out.json; complete at 100%, below it the step fails\n",
	} {
		if !strings.Contains(b.String(), line) {
			t.Errorf("plan text lacks %q:\n%s", line, b.String())
		}
	}
}

// A foreach step's plan says where its items come from and how many run
// at once, and lists its do steps under it, with their own retries.
func TestForeachPlan(t *testing.T) {
	wf := parse(t, `- name: check
  on_failure: true
  foreach:
    foreach: "ls *.md"
    parallel: true
    max_items: 5
    do:
      - shell: lint ${item}
        retry_config: {attempts: 2, initial_delay: 1s}
      - foreach: {foreach: [a, "b c"], continue_on_error: true, do: [{claude: /fix}]}
`)
	p := New(wf, nil, executor.ResolveAgent(nil, []string{"RUNNER_AGENT_COMMAND=my-agent"}))
	f := p.Phases[0].Steps[0].Foreach
	if f == nil || f.ItemsCommand != "ls *.md" || f.Parallel != 10 || f.MaxItems != 5 || len(f.Do) != 2 || len(f.Do[0].Retry) != 1 || f.Do[1].Foreach == nil {
		t.Fatalf("foreach plan %+v", f)
	}
	var b strings.Builder
	if err := p.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	want := `  1. check
     retry: none (runs once)
     on failure: continue
     foreach: the lines of ls *.md; the first 5; 10 at once; for each item:
       1. step 1: lint ${item}
          runs: the program directly, without a shell, when the values it interpolates hold no single quote
          retry: 2 attempts, exponential backoff; delays 1s (total 1s); max_delay 30s
       2. step 2: foreach: ["a", "b c"]
          retry: none (runs once)
          foreach: items "a", "b c"; one at a time; a failed item does not stop the others, but fails the step once all ran; for each item:
            1. step 1: /fix
               runs: my-agent with the text as its last argument (RUNNER_AGENT_COMMAND)
               retry: none (runs once)
`
	if !strings.Contains(b.String(), want) {
		t.Errorf("plan text\n%s\nwant it to hold\n%s", b.String(), want)
	}
}
