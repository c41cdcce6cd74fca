package job

import (
	"bytes"
	"context"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/runnerdev/runner/internal/eventlog"
	"github.com/runnerdev/runner/internal/executor"
	"github.com/runnerdev/runner/internal/jobenv"
	"github.com/runnerdev/runner/internal/state"
	"github.com/runnerdev/runner/workflow"
)

const workerWorkflow = `name: w
mode: mapreduce
env:
  REGION: eu
  DB_PASSWORD: hunter22
setup:
  - shell: echo hello
    capture_output: greeting
map:
  input: items.txt
  agent_template:
    - shell: echo "$API_TOKEN ${REGION} ${COLOR} ${greeting}"
`

// A worker opens a running job (whose lock another process holds) with
// its variables, the secrets from the environment and the setup captures,
// runs steps that report their events to its function, and writes none of
// the job's files. SecretEnv is what the worker's process needs: the
// secrets given with --set and those written in the workflow, both
// withheld from the stored job.
func TestOpenWorker(t *testing.T) {
	wf, err := workflow.Parse("w.yml", []byte(workerWorkflow))
	if err != nil {
		t.Fatal(err)
	}
	store := state.Store{Dir: t.TempDir()}
	j, err := Start(wf, []byte(workerWorkflow), Options{Store: store, JobID: "j", Vars: map[string]string{"API_TOKEN": "tok-secret-1", "COLOR": "blue"}})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Finish(state.Completed, 0, nil, nil)
	if _, err := j.RunPhase(context.Background(), PhaseSetup, wf.Setup); err != nil {
		t.Fatal(err)
	}
	if got := j.Secrets().Withheld(); !slices.Equal(slices.Sorted(slices.Values(got)), []string{"API_TOKEN=tok-secret-1", "DB_PASSWORD=hunter22"}) {
		t.Errorf("Withheld = %q, want the --set secret and the one written in the workflow", got)
	}

	var events []string
	emit := func(e eventlog.Event) { events = append(events, string(e.Type)) }
	if _, err := OpenWorker("j", Options{Store: store}, emit); !errors.Is(err, jobenv.ErrMissingSecrets) {
		t.Fatalf("OpenWorker without the secret: %v, want ErrMissingSecrets", err)
	}
	t.Setenv("API_TOKEN", "tok-secret-1")
	t.Setenv("DB_PASSWORD", "hunter22")
	w, err := OpenWorker("j", Options{Store: store}, emit)
	if err != nil {
		t.Fatal(err)
	}
	sizes := func() (n []int64) {
		for _, f := range []string{j.Layout().Events, j.Layout().Journal, j.Layout().Meta} {
			fi, err := os.Stat(f)
			if err != nil {
				t.Fatal(err)
			}
			n = append(n, fi.Size())
		}
		return n
	}
	before := sizes()
	var out bytes.Buffer
	res := w.Executor().RunStep(context.Background(), w.Workflow().Map.Template[0], executor.Run{Scope: w.Scope(), Stdout: &out})
	if res.Fatal() {
		t.Fatal(res.Err)
	}
	if got, want := strings.TrimSpace(out.String()), "*** eu blue hello"; got != want {
		t.Errorf("step printed %q, want %q (the token masked)", got, want)
	}
	if !slices.Contains(events, "step_completed") {
		t.Errorf("events %v went elsewhere than the worker's function", events)
	}
	if after := sizes(); !slices.Equal(before, after) {
		t.Errorf("the worker wrote the job's files: sizes %v, then %v", before, after)
	}
	if got := w.Layout().Logs; got != j.Layout().Logs {
		t.Errorf("Layout().Logs = %s, want the job's %s", got, j.Layout().Logs)
	}
}
