package mapreduce

import (
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/runnerdev/runner/internal/job"
	"github.com/runnerdev/runner/internal/state"
	"github.com/runnerdev/runner/internal/testkit"
	"github.com/runnerdev/runner/internal/workspace"
	"github.com/runnerdev/runner/workflow"
)

// gitRepo makes a repository with one commit on main in a new directory,
// which becomes the working directory, with git's identity in the
// environment, and returns a function that runs git there.
func gitRepo(t *testing.T) (git func(args ...string) string) {
	t.Helper()
	return testkit.GitCheckout(t, nil).Git
}

// A job on a job branch that succeeded and was not asked to merge asks
// (the terminal's question, SPEC §12.7) once, about its branch and the
// branch it started on: yes merges it into that branch, no leaves it.
func TestRunAsksToMerge(t *testing.T) {
	const src = `mode: mapreduce
map:
  input: items.json
  agent_template:
    - shell: echo ${item} > ${item}.txt && git add ${item}.txt && git commit -qm ${item}
      commit_required: true
`
	for _, answer := range []bool{true, false} {
		git := gitRepo(t)
		if err := os.WriteFile("items.json", []byte(`["a", "b"]`), 0o600); err != nil {
			t.Fatal(err)
		}
		wf, err := workflow.Parse("m.yml", []byte(src))
		if err != nil {
			t.Fatal(err)
		}
		j, err := job.Start(wf, []byte(src), job.Options{Store: state.Store{Dir: filepath.Join(t.TempDir(), "state")}, JobID: "m",
			Stdout: io.Discard, Stderr: io.Discard, TargetBranch: "main", ItemBranches: workspace.ItemBranches(wf.Map, "m")})
		if err != nil {
			t.Fatal(err)
		}
		var asked []workspace.End
		ask := func(end workspace.End) bool { asked = append(asked, end); return answer }
		sum, err := Run(t.Context(), j, Options{Dispatcher: InProcess(nil), Ending: workspace.Ending{Ask: ask}})
		j.Close()
		if err != nil || sum.Items.Succeeded != 2 {
			t.Fatalf("answer %v: Run = %+v, %v", answer, sum.Items, err)
		}
		want := workspace.End{Branch: "runner/m", Target: "main"}
		if len(asked) != 1 || asked[0] != want {
			t.Errorf("answer %v: asked %+v; want once, about %+v", answer, asked, want)
		}
		merged, last := "", git("log", "-1", "--format=%s", "main")
		if answer {
			merged = workspace.MergedByGit
		}
		if sum.Merged != merged || answer != (last == "Merge runner/m (runner job m)") {
			t.Errorf("answer %v: merged %q, main ends with %q", answer, sum.Merged, last)
		}
	}
}
