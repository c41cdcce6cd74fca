package dlq

import "sync"

// Writer adds entries to one queue file from many goroutines. Calls that
// arrive while a commit is running are committed together in the next one
// (one Open, one transaction, two fsyncs), and the file is open only while
// a commit runs, so readers in other processes never wait long. Add
// returns once its entries are durable.
type Writer struct {
	path string
	opts Options

	mu      sync.Mutex
	pending []writeRequest
	busy    bool // a goroutine is committing batches
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
	if w.busy {
		w.mu.Unlock()
		return <-req.done // the committing goroutine takes it in its next batch
	}
	w.busy = true
	w.mu.Unlock()
	for {
		w.mu.Lock()
		batch := w.pending
		w.pending = nil
		if len(batch) == 0 {
			w.busy = false
			w.mu.Unlock()
			return <-req.done
		}
		w.mu.Unlock()
		err := w.commit(batch)
		for _, r := range batch {
			r.done <- err
		}
	}
}

func (w *Writer) commit(batch []writeRequest) error {
	var all []Entry
	for _, r := range batch {
		all = append(all, r.entries...)
	}
	d, err := Open(w.path, w.opts)
	if err != nil {
		return err
	}
	err = d.Add(all...)
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}
