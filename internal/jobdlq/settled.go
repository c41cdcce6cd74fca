package jobdlq

import (
	"errors"
	"io/fs"
	"os"

	"github.com/runnerdev/runner/dlq"
	"github.com/runnerdev/runner/internal/state"
)

// MarkSettled records in the job's metadata, through update, beside its
// item counts, that they agree with the job's DLQ and its item log at
// itemLog as they are now (state.ItemsSettled: the DLQ's generation, the
// log's size), so that `runner jobs` can show them without settling
// again (CountsCurrent). It is called once the counts are written, by
// the process that holds the DLQ: at the end of the map phase, of a
// `dlq retry` and of a `dlq purge`. A process killed before leaves no
// stamp (a count written drops it). A job without a DLQ file needs none.
func (q *Queue) MarkSettled(itemLog string, update func(func(*state.Meta)) error) error {
	if _, err := os.Stat(q.path); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	size, err := fileSize(itemLog)
	if err != nil {
		return err
	}
	var s dlq.Summary
	if err := q.View(func(d *dlq.DB) (err error) { s, err = d.Summary(); return err }); err != nil {
		return err
	}
	return update(func(m *state.Meta) {
		m.ItemsSettled = &state.ItemsSettled{DLQGeneration: s.Generation, ItemLogSize: size}
	})
}

// CountsCurrent reports whether a job's item counts (of m) still hold as
// MarkSettled stamped them: neither its DLQ (s, its summary) nor its
// item log at itemLog changed since.
func CountsCurrent(m state.Meta, s dlq.Summary, itemLog string) bool {
	size, err := fileSize(itemLog)
	return err == nil && m.ItemsSettled.Holds(s.Generation, size)
}

// fileSize is the size of the file at path; 0 when there is none.
func fileSize(path string) (int64, error) {
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return 0, nil
	case err != nil:
		return 0, err
	}
	return fi.Size(), nil
}
