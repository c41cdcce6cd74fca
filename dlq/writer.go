package dlq

import (
	"errors"
	"sync"
	"time"
)

// How long a Writer keeps its handle (see Writer); tests change them.
var (
	// writerIdle: the file is closed once no call used it for this long.
	writerIdle = 10 * time.Millisecond
	// writerHold: while calls keep coming, the file is closed after this
	// long and left closed for writerRest (several lockPoll intervals),
	// so that another process that waits for it gets its turn.
	writerHold = 250 * time.Millisecond
	writerRest = 5 * lockPoll
)

// openQueue is Open as a Writer calls it, and addBatch the commit of a
// batch of Adds; tests count and hold them through these.
var (
	openQueue = Open
	addBatch  = (*DB).Add
)

// Writer is the one handle on a queue file of a process that writes to
// it often (a job's map phase), for many goroutines. Its Adds are
// committed by a goroutine of its own, one commit at a time: Adds that
// arrive while a commit runs go together into the next (one transaction,
// two fsyncs for all of them), and each Add returns as soon as its own
// entries are durable, never later for the commits of other callers'
// entries. Use and View run other operations on the same handle.
//
// The file stays open from one call to the next, so that a failing item
// costs no open, lock, mapping and check of the file, but never for long,
// so that `runner dlq list JOB` or a `dlq retry` in another process does
// not wait long: it is closed once no call used it for writerIdle, and,
// when calls keep coming, after writerHold, then left closed for
// writerRest before it is opened again. Close closes it at once.
type Writer struct {
	path string
	opts Options

	mu      sync.Mutex
	pending []writeRequest
	busy    bool // the committing goroutine (commit) runs

	file     sync.Mutex // held while the handle is used
	db       *DB        // the handle; nil: closed
	opened   time.Time  // when db was opened
	idle     *time.Timer
	closeErr error // of a close by the idle timer, for Close
}

type writeRequest struct {
	entries []Entry
	done    chan error
}

// NewWriter returns a Writer for the queue at path.
func NewWriter(path string, opts Options) *Writer {
	return &Writer{path: path, opts: opts}
}

// Add records the entries (see DB.Add) and returns when they are durable.
func (w *Writer) Add(entries ...Entry) error {
	req := writeRequest{entries: entries, done: make(chan error, 1)}
	w.mu.Lock()
	w.pending = append(w.pending, req)
	if !w.busy {
		w.busy = true
		go w.commit()
	}
	w.mu.Unlock()
	return <-req.done
}

// commit commits the pending Adds, all that are waiting in one
// transaction, until none is left.
func (w *Writer) commit() {
	for {
		w.mu.Lock()
		batch := w.pending
		w.pending = nil
		if len(batch) == 0 {
			w.busy = false
			w.mu.Unlock()
			return
		}
		w.mu.Unlock()
		var all []Entry
		for _, r := range batch {
			all = append(all, r.entries...)
		}
		err := w.Use(func(d *DB) error { return addBatch(d, all...) })
		for _, r := range batch {
			r.done <- err
		}
	}
}

// Use runs fn with the file open for writing, on the Writer's handle.
// fn must not keep d.
func (w *Writer) Use(fn func(d *DB) error) error {
	w.file.Lock()
	defer w.file.Unlock()
	if w.db != nil && time.Since(w.opened) >= writerHold {
		if err := w.closeFile(); err != nil {
			return err
		}
		time.Sleep(writerRest)
	}
	if w.db == nil {
		d, err := openQueue(w.path, w.opts)
		if err != nil {
			return err
		}
		w.db, w.opened = d, time.Now()
	}
	defer w.closeWhenIdle()
	return fn(w.db)
}

// View runs fn on the Writer's handle when it is open, else on the file
// opened read-only for fn alone (a missing file is an empty queue, and
// stays missing).
func (w *Writer) View(fn func(d *DB) error) error {
	w.file.Lock()
	defer w.file.Unlock()
	if w.db != nil {
		defer w.closeWhenIdle()
		return fn(w.db)
	}
	opts := w.opts
	opts.ReadOnly = true
	d, err := openQueue(w.path, opts)
	if err != nil {
		return err
	}
	err = fn(d)
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

// closeWhenIdle (re)starts the idle timer; w.file is held.
func (w *Writer) closeWhenIdle() {
	if w.idle == nil {
		w.idle = time.AfterFunc(writerIdle, func() {
			w.file.Lock()
			defer w.file.Unlock()
			w.closeErr = errors.Join(w.closeErr, w.closeFile())
		})
		return
	}
	w.idle.Reset(writerIdle)
}

// closeFile closes the handle if it is open; w.file is held.
func (w *Writer) closeFile() error {
	if w.db == nil {
		return nil
	}
	err := w.db.Close()
	w.db = nil
	return err
}

// Close closes the file now (a later call opens it again) and returns
// what closing it failed with since the last Close.
func (w *Writer) Close() error {
	w.file.Lock()
	defer w.file.Unlock()
	if w.idle != nil {
		w.idle.Stop()
	}
	err := errors.Join(w.closeErr, w.closeFile())
	w.closeErr = nil
	return err
}
