package job

import (
	"github.com/runnerdev/runner/internal/eventlog"
	"github.com/runnerdev/runner/internal/executor"
	"github.com/runnerdev/runner/internal/state"
	"github.com/runnerdev/runner/workflow"
)

// ID is the job's id.
func (j *Job) ID() string { return j.id }

// Workflow is the workflow the job runs (for a resumed or attached job,
// the copy stored with it).
func (j *Job) Workflow() *workflow.Workflow { return j.wf }

// Seed is the job's seed for retry jitter.
func (j *Job) Seed() uint64 { return j.seed }

// Resumed reports whether this process resumed the job.
func (j *Job) Resumed() bool { return j.resumed }

// Executor runs the job's steps.
func (j *Job) Executor() *executor.Executor { return j.exec }

// Scope returns a copy of the job's variables as they are now (after
// setup: with its captures), to read or to run map agents in.
func (j *Job) Scope() *executor.Scope { return j.scope.Child() }

// Define sets ${ns.NAME} for each of vars, for the steps that run next
// (the map phase's ${map.*} for reduce).
func (j *Job) Define(ns string, vars map[string]any) {
	for name, v := range vars {
		j.scope.SetIn(ns, name, v)
	}
}

// Meta returns a copy of the job's metadata.
func (j *Job) Meta() state.Meta {
	j.mu.Lock()
	defer j.mu.Unlock()
	m := j.st.Meta
	if m.Items != nil {
		c := *m.Items
		m.Items = &c
	}
	return m
}

// Spent is what the job's agents have spent: those that ended, in all
// its runs (its metadata's Spend), and those still running as their last
// agent_progress events report it, which their agent_usage replaces when
// they end. A budget is checked against it, and the status line shows
// it.
func (j *Job) Spent() eventlog.AgentUsage {
	j.spend.Lock()
	defer j.spend.Unlock()
	spent := j.running.Sum()
	if m := j.Meta(); m.Spend != nil {
		spent = m.Spend.Add(spent)
	}
	spent.SessionID, spent.Model = "", ""
	return spent
}

// UpdateMeta applies fn to the job's metadata as stored and saves it,
// under the job's locks (this process's and the file's: the processes
// attached to one job take turns), for the map engine's item counts and
// the NATS dispatcher's epochs.
func (j *Job) UpdateMeta(fn func(*state.Meta)) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.st.Update(fn)
}

// State is the job's directory as package state keeps it: the map engine
// keeps its items, item log and item output logs there. Its metadata is
// changed only through UpdateMeta.
func (j *Job) State() *state.Job { return j.st }

// SetDir makes dir the directory the job's phases run in (and that a
// relative working_dir is resolved in): the job's git worktree, whose
// name (its branch) is worktree, with worktree isolation. "" is this
// process's directory.
func (j *Job) SetDir(dir, worktree string) { j.dir, j.worktree = dir, worktree }

// Dir is the directory the job's phases run in; "" is this process's.
func (j *Job) Dir() string { return j.dir }

// Layout is where the job's files are in its directory.
func (j *Job) Layout() state.Layout { return j.st.Layout() }
