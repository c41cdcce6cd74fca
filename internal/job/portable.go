package job

import (
	"fmt"
	"os"

	"github.com/runnerdev/runner/internal/eventlog"
	"github.com/runnerdev/runner/internal/state"
)

// Portable is what another machine needs to run a job's map items: its
// metadata, its stored workflow copy and its setup's journal records, all
// as stored, so without a secret (the copy says WITHHELD where the file
// had one, captured values are sealed, and Meta names the secrets that
// whoever opens it must have in its environment).
type Portable struct {
	Meta     state.Meta         `json:"meta"`
	Workflow string             `json:"workflow"`
	Setup    []state.StepRecord `json:"setup,omitempty"`
}

// Portable returns the job as another machine opens it with OpenPortable.
func (j *Job) Portable() (Portable, error) {
	meta := j.Meta()
	copied, err := os.ReadFile(j.st.WorkflowCopy())
	if err != nil {
		return Portable{}, fmt.Errorf("job %s: %w", j.id, err)
	}
	done, err := j.st.ReadJournal()
	if err != nil {
		return Portable{}, fmt.Errorf("job %s: %w", j.id, err)
	}
	p := Portable{Meta: meta, Workflow: string(copied)}
	for _, step := range j.wf.Setup {
		if rec, ok := done[PhaseSetup][step.Index]; ok {
			p.Setup = append(p.Setup, rec)
		}
	}
	return p, nil
}

// OpenPortable stores p as a job of store (a directory of this process's
// own, not the job's owner's) and opens it as a Worker whose events go to
// emit. Its secrets come from this process's environment: a missing one is
// an ErrMissingSecrets naming it.
func OpenPortable(p Portable, store state.Store, opts Options, emit func(eventlog.Event)) (*Worker, error) {
	meta := p.Meta
	meta.PID, meta.Status = os.Getpid(), state.Running
	dir := store.Layout(meta.ID).Dir
	if err := os.RemoveAll(dir); err != nil { // an older copy of the job
		return nil, fmt.Errorf("job %s: %w", meta.ID, err)
	}
	st, err := store.Create(meta, []byte(p.Workflow))
	if err != nil {
		return nil, err
	}
	st.Unlock() // nothing else opens this copy
	jr, err := st.OpenJournal()
	if err != nil {
		return nil, err
	}
	for _, rec := range p.Setup {
		if err := jr.Append(rec); err != nil {
			jr.Close()
			return nil, err
		}
	}
	if err := jr.Close(); err != nil {
		return nil, err
	}
	opts.Store = store
	return OpenWorker(meta.ID, opts, emit)
}

// Mask replaces the job's secret values, as this process has them, in s
// with ***.
func (w *Worker) Mask(s string) string { return w.j.secrets.Mask(s) }
