package executor

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/runnerdev/runner/internal/state"
	"github.com/runnerdev/runner/workflow"
	"github.com/runnerdev/runner/workflow/interp"
)

// In a repository without any commit yet (an unborn branch), the commits
// a step makes are all of HEAD's history, and a step that makes none fails
// as no_commit.
func TestCommitsInUnbornRepository(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	dir := t.TempDir()
	env := append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com")
	if out, err := exec.Command("git", "init", "-q", dir).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v %s", err, out)
	}
	wf, err := workflow.Parse("c.yml", []byte(fmt.Sprintf(`
- id: none
  shell: "true"
  working_dir: %[1]q
  commit_required: true
- id: first
  shell: touch a && git add a && git commit -qm one && touch b && git add b && git commit -qm two
  working_dir: %[1]q
  commit_required: true
`, dir)))
	if err != nil {
		t.Fatal(err)
	}
	x := &Executor{Env: env, TmpDir: t.TempDir()}
	sc := NewScope(nil, env)
	if res := x.RunStep(t.Context(), wf.Steps[0], Run{Scope: sc}); res.Status != StepFailed || res.Outcome.Kind != "no_commit" {
		t.Errorf("no commit in an unborn repository: %s %q %v", res.Status, res.Outcome.Kind, res.Err)
	}
	res := x.RunStep(t.Context(), wf.Steps[1], Run{Scope: sc})
	if res.Status != StepSucceeded {
		t.Fatal(res.Err)
	}
	out, err := exec.Command("git", "-C", dir, "rev-list", "--reverse", "HEAD").Output()
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Fields(string(out))
	got, _ := res.Vars["steps.first"].(map[string]any)["commits"].(interp.JSONList)
	if len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("commits %v, want %v", got, want)
	}
}

// A step's commits read back from the journal (a resumed job) are still a
// JSON array in ${steps.ID.commits}, not a list of strings joined by ", ".
func TestRecordedCommitsStayJSON(t *testing.T) {
	rec := StepResult{Status: StepSucceeded, Vars: map[string]any{"steps.lint": map[string]any{"commits": commitList([]string{"a1", "b2"})}}}
	data, err := json.Marshal(rec.Record(&workflow.Step{}))
	if err != nil {
		t.Fatal(err)
	}
	var back state.StepRecord
	if err := json.Unmarshal(data, &back); err != nil {
		t.Fatal(err)
	}
	sc := NewScope(nil, nil)
	sc.Apply(RecordedVars(back))
	tmpl, err := interp.Parse("echo ${steps.lint.commits}")
	if err != nil {
		t.Fatal(err)
	}
	if got, err := tmpl.Expand(sc.Lookup(), interp.Plain); err != nil || got != `echo ["a1","b2"]` {
		t.Errorf("got %q, %v; want a JSON array", got, err)
	}
}
