package job

import (
	"errors"
	"fmt"

	"github.com/runnerdev/runner/internal/eventlog"
	"github.com/runnerdev/runner/internal/state"
)

// ExitItemsInDLQ is the exit code of a MapReduce job that finished with
// items in its dead-letter queue.
const ExitItemsInDLQ = 3

// ItemsInDLQ ends a MapReduce job that finished with items in its DLQ.
type ItemsInDLQ struct {
	N   int
	Job string
}

func (e ItemsInDLQ) Error() string {
	return fmt.Sprintf("%d item(s) in the dead-letter queue: runner dlq list %s", e.N, e.Job)
}

// Stored is a job that this process does not run, as `dlq purge` settles
// it: its item log and its item counts.
type Stored struct{ *state.Job }

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
// completed job's exit code and message follow its DLQ: ExitItemsInDLQ
// and ItemsInDLQ while items remain, 0 once it is empty. A job whose map
// phase never began has no counts: settle is not called and the counts
// returned are zero.
func (s Stored) UpdateItemCounts(settle func(ItemCounts) (ItemCounts, error)) (ItemCounts, error) {
	var (
		counts ItemCounts
		serr   error
	)
	err := s.Update(func(m *state.Meta) {
		if m.Items == nil {
			return
		}
		if counts, serr = settle(*m.Items); serr != nil {
			return
		}
		SetItemCounts(m, counts)
	})
	if serr != nil {
		return counts, serr
	}
	return counts, err
}

// SetItemCounts gives a MapReduce job's metadata new item counts; a
// completed job's exit code and error follow its DLQ (see
// Stored.UpdateItemCounts).
func SetItemCounts(m *state.Meta, counts ItemCounts) {
	*m.Items = counts
	if m.Status == state.Completed && (m.ExitCode == 0 || m.ExitCode == ExitItemsInDLQ) {
		m.ExitCode, m.Error = 0, ""
		if counts.DLQ > 0 {
			m.ExitCode, m.Error = ExitItemsInDLQ, ItemsInDLQ{N: counts.DLQ, Job: m.ID}.Error()
		}
	}
}

// UpdateItemCounts is Stored.UpdateItemCounts for a job this process holds
// (an attached `dlq retry`).
func (j *Job) UpdateItemCounts(settle func(ItemCounts) (ItemCounts, error)) (ItemCounts, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	return Stored{j.st}.UpdateItemCounts(settle)
}
