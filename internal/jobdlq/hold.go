package jobdlq

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/runnerdev/runner/dlq"
	"github.com/runnerdev/runner/internal/state"
)

// Holder is the record of a process that holds a DLQ with Hold.
type Holder struct {
	Owner   string    `json:"owner"`   // host:pid:start (claimOwner)
	Command string    `json:"command"` // what it runs, e.g. "runner dlq retry JOB"
	Since   time.Time `json:"since"`
}

// String says who the holder is, for people.
func (h Holder) String() string {
	return fmt.Sprintf("%s (%s) since %s", DescribeOwner(h.Owner), h.Command, h.Since.Local().Format(time.DateTime))
}

// HeldError is returned by Hold when another process holds the DLQ.
type HeldError struct {
	Path   string
	Holder *Holder // nil: a process that left no record (a reader, or a job writing a failure)
}

// Unwrap makes a HeldError a dlq.ErrLocked.
func (e *HeldError) Unwrap() error { return dlq.ErrLocked }

// OpenReader opens the queue at path for reading (dlq.Open, read-only);
// when another process holds it, the error names that process (a
// *HeldError).
func OpenReader(path string) (*dlq.DB, error) {
	d, err := openDB(path, dlq.Options{ReadOnly: true})
	if errors.Is(err, dlq.ErrLocked) {
		return nil, fmt.Errorf("%w; try again", heldError(path, ""))
	}
	return d, err
}

func (e *HeldError) Error() string {
	if e.Holder == nil {
		return fmt.Sprintf("dlq: %s: locked by another process", e.Path)
	}
	return fmt.Sprintf("dlq: %s: held by %s", e.Path, e.Holder)
}

// Hold opens the queue once for the life of a process that works through
// many of its items (`dlq retry`): every later operation uses this handle
// until Close, and other processes find the file held by command (this
// process and since when, recorded beside the file). When another process
// holds it, Hold waits for it for up to wait (saying so once on stderr),
// then fails with a *HeldError naming the holder; wait 0 fails at once
// (after dlq.DefaultTimeout). Cancelling the queue's context ends the wait
// with its cause.
func (q *Queue) Hold(command string, wait time.Duration) error {
	opts := q.opts
	opts.Wait, opts.Waiting = nil, nil
	if wait > 0 {
		ctx, cancel := context.WithTimeout(q.ctx, wait)
		defer cancel()
		opts.Wait = ctx
		opts.Waiting = func() {
			q.once.Do(func() { fmt.Fprintf(q.stderr, "runner: %s; waiting up to %s\n", heldError(q.path, q.owner), wait) })
		}
	}
	if err := q.w.Close(); err != nil { // this process's own handle would bar it
		return err
	}
	d, err := openDB(q.path, opts)
	switch {
	case err == nil:
	case errors.Is(err, dlq.ErrLocked) && q.ctx.Err() != nil:
		return context.Cause(q.ctx)
	case errors.Is(err, dlq.ErrLocked):
		return heldError(q.path, q.owner)
	default:
		return err
	}
	h := Holder{Owner: q.owner, Command: command, Since: time.Now().UTC()}
	if err := writeHolder(state.HolderOf(q.path), h); err != nil {
		d.Close()
		return err
	}
	q.held = d
	return nil
}

// Close closes the file: it ends a Hold (the holder record goes, then the
// file's lock) or closes the map phase's handle.
func (q *Queue) Close() error {
	if q.held == nil {
		return q.w.Close()
	}
	err := os.Remove(state.HolderOf(q.path))
	if errors.Is(err, os.ErrNotExist) {
		err = nil
	}
	err = errors.Join(err, q.held.Close())
	q.held = nil
	return err
}

// heldError names the process other than self that holds the file at
// path, when it left a record and still runs.
func heldError(path, self string) *HeldError {
	e := &HeldError{Path: path}
	if h, ok := readHolder(state.HolderOf(path)); ok && !ownerGone(h.Owner) && h.Owner != self {
		e.Holder = &h
	}
	return e
}

// writeHolder records h at path, whole or not at all.
func writeHolder(path string, h Holder) error {
	data, err := json.Marshal(h)
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".new-*")
	if err != nil {
		return fmt.Errorf("dlq: %w", err)
	}
	defer os.Remove(tmp.Name())
	_, err = tmp.Write(data)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		return fmt.Errorf("dlq: holder record: %w", err)
	}
	return nil
}

// readHolder reads a holder record; ok is false when there is none or it
// cannot be read.
func readHolder(path string) (h Holder, ok bool) {
	data, err := os.ReadFile(path)
	if err != nil || json.Unmarshal(data, &h) != nil || h.Owner == "" {
		return Holder{}, false
	}
	return h, true
}
