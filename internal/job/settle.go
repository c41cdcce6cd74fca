package job

import (
	"errors"
	"fmt"

	"github.com/runnerdev/runner/internal/eventlog"
	"github.com/runnerdev/runner/internal/state"
)

// ItemsInDLQ is how a MapReduce job that completed with items in its DLQ
// ended: its outcome, which cmd maps to its exit code.
type ItemsInDLQ struct {
	N   int
	Job string
}

func (e ItemsInDLQ) Error() string {
	return fmt.Sprintf("%d item(s) in the dead-letter queue: runner dlq list %s", e.N, e.Job)
}

// Stored is a job that this process does not run, as `dlq purge` settles
// it: its item log and its item counts. ExitCode maps its outcome to its
// exit code (see SetItemCounts).
type Stored struct {
	*state.Job
	ExitCode func(error) int
}

// Emit adds events to the job's event log.
func (s Stored) Emit(events ...eventlog.Event) error {
	if len(events) == 0 {
		return nil
	}
	log, err := eventlog.Open(s.Layout().Events, s.Meta.ID, eventlog.Options{})
	if err != nil {
		return err
	}
	for _, e := range events {
		if _, err = log.Emit(e); err != nil {
			break
		}
	}
	return errors.Join(err, log.Close())
}

// UpdateItemCounts replaces the job's item counts with what settle makes
// of the current ones, under the job's metadata lock, so that processes
// settling at once do not overwrite newer counts with older ones. A
// completed job's outcome follows its DLQ (SetItemCounts). A job whose
// map phase never began has no counts: settle is not called and the
// counts returned are zero.
func (s Stored) UpdateItemCounts(settle func(state.ItemCounts) (state.ItemCounts, error)) (state.ItemCounts, error) {
	var (
		counts state.ItemCounts
		serr   error
	)
	err := s.Update(func(m *state.Meta) {
		if m.Items == nil {
			return
		}
		if counts, serr = settle(*m.Items); serr != nil {
			return
		}
		SetItemCounts(m, counts, s.ExitCode)
	})
	if serr != nil {
		return counts, serr
	}
	return counts, err
}

// SetItemCounts gives a MapReduce job's metadata new item counts. A
// completed job's outcome follows its DLQ: ItemsInDLQ while items remain,
// success once it is empty; exit maps it to the job's exit code and error
// (nil: they are left as they are).
func SetItemCounts(m *state.Meta, counts state.ItemCounts, exit func(error) int) {
	*m.Items, m.ItemsSettled = counts, nil
	if exit == nil || m.Status != state.Completed {
		return
	}
	if m.ExitCode != exit(nil) && m.ExitCode != exit(ItemsInDLQ{}) {
		return // it failed otherwise: its merge, say
	}
	var outcome error
	m.Error = ""
	if counts.DLQ > 0 {
		outcome = ItemsInDLQ{N: counts.DLQ, Job: m.ID}
		m.Error = outcome.Error()
	}
	m.ExitCode = exit(outcome)
}

// UpdateItemCounts is Stored.UpdateItemCounts for a job this process holds
// (an attached `dlq retry`).
func (j *Job) UpdateItemCounts(settle func(state.ItemCounts) (state.ItemCounts, error)) (state.ItemCounts, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	return Stored{Job: j.st, ExitCode: j.exitCode}.UpdateItemCounts(settle)
}
