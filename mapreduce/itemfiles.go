package mapreduce

import (
	"github.com/runnerdev/runner/internal/job"
	"github.com/runnerdev/runner/internal/jobenv"
	"github.com/runnerdev/runner/internal/state"
)

// itemFiles are the map phase's part of a job's directory, which the
// engine keeps: the items file, the item log (the items' states and the
// checkpoints of running ones, whose variables hold the job's secrets
// sealed), the items' output logs, and the item counts in the job's
// metadata.
type itemFiles struct {
	st      *state.Job
	secrets *jobenv.Secrets
	update  func(func(*state.Meta)) error // the job's metadata, under its locks
	// settleCounts is job.Job.UpdateItemCounts: the counts and, for a
	// completed job, the outcome its DLQ makes.
	settleCounts func(settle func(state.ItemCounts) (state.ItemCounts, error)) (state.ItemCounts, error)
}

// filesOf is j's itemFiles.
func filesOf(j *job.Job) itemFiles {
	return itemFiles{st: j.State(), secrets: j.Secrets(), update: j.UpdateMeta, settleCounts: j.UpdateItemCounts}
}

// itemsPath is the items file, which the map writes once, when it loads
// its items.
func (f itemFiles) itemsPath() string { return f.st.Layout().Items }

// logPath is the output log of item id.
func (f itemFiles) logPath(id string) string { return f.st.ItemLogPath(id) }

// open opens the item log for appending.
func (f itemFiles) open() (*itemLog, error) {
	l, err := f.st.OpenItemLog()
	if err != nil {
		return nil, err
	}
	return &itemLog{log: l, secrets: f.secrets}, nil
}

// RunningItems returns the items last seen running, by index, with
// their checkpoints (their secret values put back), read through the item
// log's index.
func (f itemFiles) RunningItems() (map[int]state.ItemRecord, error) {
	states, err := f.st.LoadItemStates()
	if err != nil {
		return nil, err
	}
	records := states.Running()
	for i, rec := range records {
		for k := range rec.Steps {
			rec.Steps[k].Vars = f.secrets.Unseal(rec.Steps[k].Vars)
		}
		records[i] = rec
	}
	return records, nil
}

// LoadItemStates reads the items' states through the item log's index
// (for settling the log with the DLQ).
func (f itemFiles) LoadItemStates() (*state.ItemStates, error) { return f.st.LoadItemStates() }

// Layout is the job directory's.
func (f itemFiles) Layout() state.Layout { return f.st.Layout() }

// AppendItemRecords adds records to the item log, synced when it returns
// (for settling the log with the DLQ).
func (f itemFiles) AppendItemRecords(recs ...state.ItemRecord) error {
	return f.st.AppendItemRecords(recs...)
}

// setCounts records the item counts in the job's metadata, for `runner
// jobs` while the map runs and for the summary after.
func (f itemFiles) setCounts(c state.ItemCounts) error {
	return f.update(func(m *state.Meta) { m.Items, m.ItemsSettled = &c, nil })
}

// UpdateItemCounts is job.Stored.UpdateItemCounts for a job this process
// holds (an attached `dlq retry`).
func (f itemFiles) UpdateItemCounts(settle func(state.ItemCounts) (state.ItemCounts, error)) (state.ItemCounts, error) {
	return f.settleCounts(settle)
}

// itemLog is the item log open for appending.
type itemLog struct {
	log     *state.ItemLog
	secrets *jobenv.Secrets
}

// Append records rec; it has reached the kernel when Append returns.
func (l *itemLog) Append(rec state.ItemRecord) error {
	if rec.Step != nil {
		step := *rec.Step
		step.Vars = l.secrets.Seal(step.Vars)
		rec.Step = &step
	}
	return l.log.Append(rec)
}

// States returns the items' states as the log has them now, and the
// records of the items last seen running with their checkpoints' secret
// values put back.
func (l *itemLog) States() (*state.ItemStates, map[int]state.ItemRecord) {
	states := l.log.States()
	running := states.Running()
	for i, rec := range running {
		for k := range rec.Steps {
			rec.Steps[k].Vars = l.secrets.Unseal(rec.Steps[k].Vars)
		}
		running[i] = rec
	}
	return states, running
}

// Close syncs and closes the log.
func (l *itemLog) Close() error { return l.log.Close() }
