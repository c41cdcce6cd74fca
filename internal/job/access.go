package job

import (
	"cmp"
	"github.com/runnerdev/runner/internal/executor"
	"github.com/runnerdev/runner/internal/state"
	"github.com/runnerdev/runner/workflow"
)

// The item log's record types, as the map phase writes them through a Job
// (it never opens the state files itself).
type (
	ItemRecord = state.ItemRecord
	StepRecord = state.StepRecord
	ItemCounts = state.ItemCounts
)

// Item states in the item log.
const (
	ItemRunning   = state.ItemRunning
	ItemSucceeded = state.ItemSucceeded
	ItemDLQ       = state.ItemDLQ
	ItemSkipped   = state.ItemSkipped
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

// SetItemCounts records the map phase's item counts in the job's
// metadata, for `runner jobs` while it runs and for the summary after.
func (j *Job) SetItemCounts(c ItemCounts) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.st.Meta.Items = &c
	return j.st.Save()
}

// NextDistEpoch records that this process runs the job's items on NATS
// as d says, in an epoch after every earlier process's, and returns the
// record: its epoch, and the key of the first process (d's for the
// first). It is saved before it returns: a process that dies after
// publishing cannot leave its epoch to the next one.
func (j *Job) NextDistEpoch(d state.Dist) (state.Dist, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if prev := j.st.Meta.Dist; prev != nil {
		d.Epoch = prev.Epoch
		d.Key = cmp.Or(prev.Key, d.Key)
	}
	d.Epoch++
	j.st.Meta.Dist = &d
	return d, j.st.Save()
}

// SetDir makes dir the directory the job's phases run in (and that a
// relative working_dir is resolved in): the job's git worktree, whose
// name (its branch) is worktree, with worktree isolation. "" is this
// process's directory.
func (j *Job) SetDir(dir, worktree string) { j.dir, j.worktree = dir, worktree }

// Dir is the directory the job's phases run in; "" is this process's.
func (j *Job) Dir() string { return j.dir }

// Layout is where the job's files are in its directory.
func (j *Job) Layout() state.Layout { return j.st.Layout() }

// Path is the path of a file or directory of the job's own under the
// state dir (items, results, logs).
//
// Deprecated: use Layout; kept while mapreduce, natsdispatch and jobtree
// call it.
func (j *Job) Path(name string) string { return j.st.Path(name) }

// ItemsPath is the path of a MapReduce job's items file, which its map
// writes once, when it loads its items.
func (j *Job) ItemsPath() string { return j.st.Path(state.ItemsFile) }

// EventsPath is the path of the job's event log.
//
// Deprecated: use Layout().Events; kept while mapreduce's and
// natsdispatch's tests call it.
func (j *Job) EventsPath() string { return j.Layout().Events }

// ItemLogPath is the path of the output log of the job's map item id.
func (j *Job) ItemLogPath(id string) string { return j.st.ItemLogPath(id) }

// ItemLog is the job's item log open for appending: item state changes
// and the checkpoints of running items, whose variables it stores with
// the job's secret values sealed.
type ItemLog struct {
	log *state.ItemLog
	j   *Job
}

// OpenItemLog opens the job's item log for appending.
func (j *Job) OpenItemLog() (*ItemLog, error) {
	l, err := j.st.OpenItemLog()
	if err != nil {
		return nil, err
	}
	return &ItemLog{log: l, j: j}, nil
}

// Append records rec; it has reached the kernel when Append returns.
func (l *ItemLog) Append(rec ItemRecord) error {
	if rec.Step != nil {
		step := *rec.Step
		step.Vars = l.j.secrets.Seal(step.Vars)
		rec.Step = &step
	}
	return l.log.Append(rec)
}

// Close syncs and closes the log.
func (l *ItemLog) Close() error { return l.log.Close() }

// ReadItemStates returns the last recorded state of every item, by
// index, with the checkpoints of the items last seen running (their secret
// values put back).
func (j *Job) ReadItemStates() (map[int]ItemRecord, error) {
	records, err := j.st.ReadItemStates()
	for i, rec := range records {
		for k := range rec.Steps {
			rec.Steps[k].Vars = j.secrets.Unseal(rec.Steps[k].Vars)
		}
		records[i] = rec
	}
	return records, err
}

// AppendItemRecords adds records to the item log, synced when it returns
// (for settling the log with the DLQ).
func (j *Job) AppendItemRecords(recs ...ItemRecord) error {
	return j.st.AppendItemRecords(recs...)
}
