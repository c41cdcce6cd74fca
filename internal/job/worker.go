package job

import (
	"github.com/runnerdev/runner/internal/eventlog"
	"github.com/runnerdev/runner/internal/executor"
	"github.com/runnerdev/runner/internal/state"
	"github.com/runnerdev/runner/workflow"
)

// Worker is a stored job opened to run some of its work for the process
// that runs it (`runner agent`, for the map items that process sends): as
// Attach opens it (the stored workflow copy, the stored variables, the
// secrets given again, the setup captures), but it takes no lock and
// writes neither the event log nor the journal; the events of its steps go
// to the function it was opened with.
type Worker struct{ j *Job }

// OpenWorker opens a stored job as a Worker whose steps' events go to
// emit. Its secrets come from opts.Vars or the environment, as for
// Resume.
func OpenWorker(id string, opts Options, emit func(eventlog.Event)) (*Worker, error) {
	st, err := opts.Store.Open(id)
	if err != nil {
		return nil, err
	}
	wf, err := storedWorkflow(st, &opts)
	if err != nil {
		return nil, err
	}
	j, err := prepare(st, wf, opts, nil)
	if err == nil {
		err = j.restoreSetup()
	}
	if err != nil {
		return nil, err
	}
	j.exec.Emit = emit
	return &Worker{j: j}, nil
}

// Executor runs the job's steps.
func (w *Worker) Executor() *executor.Executor { return w.j.exec }

// Scope returns a copy of the job's variables after its setup.
func (w *Worker) Scope() *executor.Scope { return w.j.Scope() }

// Workflow is the job's stored workflow copy.
func (w *Worker) Workflow() *workflow.Workflow { return w.j.wf }

// Layout is where the job's files are in its directory.
func (w *Worker) Layout() state.Layout { return w.j.Layout() }

// ItemLogPath is the path of the output log of the job's map item id.
func (w *Worker) ItemLogPath(id string) string { return w.j.st.ItemLogPath(id) }

// Meta returns a copy of the job's metadata.
func (w *Worker) Meta() state.Meta { return w.j.Meta() }
