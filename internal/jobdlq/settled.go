package jobdlq

import (
	"errors"
	"io/fs"
	"os"

	"github.com/runnerdev/runner/dlq"
)

// MarkSettled records in the job's DLQ that the item counts in the job's
// metadata agree with it and with the item log at itemLog as they are
// now (a dlq.Stamp of the log's size), so that `runner jobs` can show
// them without settling again (CountsCurrent). It is called once the
// counts are written: at the end of the map phase, of a `dlq retry` and
// of a `dlq purge`. A process killed before leaves the older stamp, which
// no longer matches once the files changed. A job without a DLQ file
// needs none.
func (q *Queue) MarkSettled(itemLog string) error {
	if _, err := os.Stat(q.path); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	size, err := fileSize(itemLog)
	if err != nil {
		return err
	}
	return q.Update(func(d *dlq.DB) error { return d.SetStamp(size) })
}

// CountsCurrent reports whether a job's item counts are still those that
// MarkSettled stamped: neither its DLQ (s, its summary) nor its item log
// at itemLog changed since.
func CountsCurrent(s dlq.Summary, itemLog string) bool {
	if s.Stamp == nil || s.Stamp.Generation != s.Generation {
		return false
	}
	size, err := fileSize(itemLog)
	return err == nil && size == s.Stamp.Note
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
