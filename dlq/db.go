package dlq

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
)

// DefaultTimeout is how long Open waits for another process's lock.
const DefaultTimeout = time.Second

// lockPoll is how often Open tries again to lock a file that another
// process holds.
const lockPoll = 2 * time.Millisecond

// ErrDamaged is wrapped by every error about a file that is not a valid
// dead-letter queue: "dlq: <path>: damaged: <detail>".
var ErrDamaged = errors.New("damaged")

// formatVersion is the layout of the buckets below; stored in the meta
// bucket. Format "1" lacks the summary (keySummary, bucketLast): it is
// read as it is and given one by its next write open.
const (
	formatVersion = "2"
	formatV1      = "1"
)

// Buckets. items holds the Item JSON under itemKey(index, id), so that a
// cursor walks the queue in item_index order; ids maps an item id to its
// key in items; claims maps an item id to its lease.
var (
	bucketMeta   = []byte("meta")
	bucketItems  = []byte("items")
	bucketIDs    = []byte("ids")
	bucketClaims = []byte("claims")
	keyVersion   = []byte("version")
)

// Options configure Open.
type Options struct {
	// Timeout bounds the wait for a lock held by another process; after it
	// Open fails with ErrLocked. Zero or less means DefaultTimeout: bbolt's
	// own "wait forever" is never used.
	Timeout time.Duration
	// ReadOnly opens the file with a shared lock (several readers at once,
	// no writer). A missing or empty file is not an error: Open returns an
	// empty, read-only view and creates nothing.
	ReadOnly bool
	// Now is the clock used for leases and for failures without a time;
	// nil means time.Now.
	Now func() time.Time
	// Wait, when set, makes Open keep trying while another process holds
	// the file, each try bounded by Timeout, until Wait ends; Waiting, if
	// set, is called after each try that timed out.
	// A job that records failures waits so rather than fail.
	Wait    context.Context
	Waiting func()
	// Gone reports that a lease holder no longer exists (its process
	// ended), so that its leases are free before they expire; nil: leases
	// last until they expire.
	Gone func(owner string) bool
}

// DB is an open dead-letter queue file. It holds the file lock until Close:
// keep it open for one operation, not for the life of a job. Its methods are
// safe for concurrent use.
type DB struct {
	path     string
	bolt     *bolt.DB // nil: read-only view of a missing file
	opts     Options
	readOnly bool
	now      func() time.Time
	gone     func(owner string) bool
}

// Open opens the queue at path. Without ReadOnly it creates the file (mode
// 0600), its parent directories (0700) and its buckets when missing. A file
// held by another process for longer than opts.Timeout gives an error
// wrapping ErrLocked; a file that is not a valid queue gives one wrapping
// ErrDamaged.
func Open(path string, opts Options) (*DB, error) {
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	d := &DB{path: path, opts: opts, readOnly: opts.ReadOnly, now: opts.Now, gone: opts.Gone}
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist) && opts.ReadOnly:
		return d, nil
	case errors.Is(err, fs.ErrNotExist):
		if err := create(path, opts); err != nil {
			return nil, err
		}
	case err != nil:
		return nil, fmt.Errorf("dlq: %w", err)
	case fi.Mode().IsRegular() && fi.Size() == 0:
		// Never a queue in the making (create fills a file before it
		// takes the name): bbolt would silently make it a new, empty one.
		return nil, damaged(path, "empty file (0 bytes)")
	}
	if err := d.openFile(opts); err != nil {
		return nil, err
	}
	return d, nil
}

// openFile opens d.path with bbolt and checks it (see init).
func (d *DB) openFile(opts Options) error {
	b, err := openBolt(d.path, opts)
	for opts.Wait != nil && errors.Is(err, ErrLocked) && opts.Wait.Err() == nil {
		if opts.Waiting != nil {
			opts.Waiting()
		}
		b, err = openBolt(d.path, opts)
	}
	if err != nil {
		return err
	}
	d.bolt = b
	if err := d.init(); err != nil {
		_ = b.Close()
		return err
	}
	return nil
}

// create makes a new queue at path: it is built and synced under a
// temporary name and then linked into place, so that a file named path is
// always a whole queue, and a crash or a reader never sees a half-made one.
// Losing the race to another creator is not an error.
func create(path string, opts Options) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("dlq: %w", err)
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".new-*")
	if err != nil {
		return fmt.Errorf("dlq: %w", err)
	}
	tmp := f.Name()
	defer os.Remove(tmp)
	if err := f.Close(); err != nil {
		return fmt.Errorf("dlq: %w", err)
	}
	d := &DB{path: tmp, now: opts.Now}
	if err := d.openFile(opts); err != nil {
		return err
	}
	if err := d.Close(); err != nil {
		return err
	}
	if err := os.Link(tmp, path); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("dlq: create %s: %w", path, err)
	}
	return syncDir(dir)
}

// syncDir makes a new name in dir durable.
func syncDir(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("dlq: %w", err)
	}
	defer f.Close()
	if err := f.Sync(); err != nil {
		return fmt.Errorf("dlq: sync %s: %w", dir, err)
	}
	return nil
}

// openBolt is bolt.Open with bbolt's errors and panics turned into ours.
func openBolt(path string, opts Options) (db *bolt.DB, err error) {
	var file *os.File
	bo := &bolt.Options{
		Timeout:  opts.Timeout,
		ReadOnly: opts.ReadOnly,
		OpenFile: func(name string, flag int, perm os.FileMode) (*os.File, error) {
			f, err := os.OpenFile(name, flag, perm)
			if err != nil {
				return nil, err
			}
			if err := lock(f, !opts.ReadOnly, opts.Timeout); err != nil {
				_ = f.Close()
				return nil, err
			}
			file = f
			return f, nil
		},
	}
	defer func() {
		if r := recover(); r != nil {
			if !fromDamage(r) {
				panic(r)
			}
			if file != nil {
				// bbolt's mapping of the file is lost, and it keeps the
				// file (and so its flock) alive: unlock explicitly.
				unlock(file)
				_ = file.Close()
			}
			db, err = nil, damaged(path, fmt.Sprintf("open: %v", r))
		}
	}()
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	db, err = bolt.Open(path, 0o600, bo)
	if err == nil {
		return db, nil
	}
	var pe *fs.PathError
	switch {
	case errors.Is(err, berrors.ErrTimeout):
		return nil, fmt.Errorf("dlq: %s: %w", path, ErrLocked)
	case errors.Is(err, berrors.ErrInvalid), errors.Is(err, berrors.ErrChecksum),
		errors.Is(err, berrors.ErrVersionMismatch),
		strings.Contains(err.Error(), "file size too small"):
		return nil, damaged(path, err.Error())
	case errors.As(err, &pe):
		return nil, fmt.Errorf("dlq: %w", err)
	}
	return nil, fmt.Errorf("dlq: open %s: %w", path, err)
}

// init checks the file and creates the buckets it lacks.
func (d *DB) init() error {
	fi, err := os.Stat(d.path)
	if err != nil {
		return fmt.Errorf("dlq: %w", err)
	}
	create := false
	err = d.view("open", func(tx *bolt.Tx) error {
		if need := tx.Size(); need > fi.Size() {
			return damagedf("truncated: %d bytes, the database needs %d", fi.Size(), need)
		}
		meta := tx.Bucket(bucketMeta)
		if meta == nil {
			create = true
			return nil
		}
		switch v := meta.Get(keyVersion); {
		case v == nil, string(v) == formatV1:
			create = true
		case string(v) != formatVersion:
			return fmt.Errorf("format version %q is not supported (this runner writes %q)", v, formatVersion)
		}
		for _, name := range [][]byte{bucketItems, bucketIDs, bucketClaims} {
			if tx.Bucket(name) == nil {
				create = true
			}
		}
		return nil
	})
	if err != nil || !create || d.readOnly {
		return err
	}
	return d.update("open", func(tx *bolt.Tx) error {
		for _, name := range [][]byte{bucketMeta, bucketItems, bucketIDs, bucketClaims} {
			if _, err := tx.CreateBucketIfNotExists(name); err != nil {
				return damagedf("bucket %s: %v", name, err)
			}
		}
		if err := addSummary(tx); err != nil {
			return err
		}
		return tx.Bucket(bucketMeta).Put(keyVersion, []byte(formatVersion))
	})
}

// Close releases the file and its lock. Closing twice is not an error.
func (d *DB) Close() error {
	if d.bolt == nil {
		return nil
	}
	if err := d.bolt.Close(); err != nil {
		return fmt.Errorf("dlq: close %s: %w", d.path, err)
	}
	return nil
}

// view runs fn in a read transaction; on a view of a missing file it does
// nothing. Errors are prefixed with the path and op; panics that come from a
// damaged file become ErrDamaged (see fromDamage), others go on.
func (d *DB) view(op string, fn func(*bolt.Tx) error) error {
	if d.bolt == nil {
		return nil
	}
	return d.tx(d.bolt, op, false, fn)
}

// update runs fn in one write transaction (two fsyncs).
func (d *DB) update(op string, fn func(*bolt.Tx) error) error {
	if d.bolt == nil || d.readOnly {
		return fmt.Errorf("dlq: %s: %s: opened read-only", d.path, op)
	}
	return d.tx(d.bolt, op, true, fn)
}

// tx runs fn in a transaction of b, a mapping of d's file.
func (d *DB) tx(b *bolt.DB, op string, write bool, fn func(*bolt.Tx) error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			if !fromDamage(r) {
				panic(r)
			}
			err = damaged(d.path, fmt.Sprintf("%s: %v", op, r))
		}
	}()
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	if write {
		err = b.Update(fn)
	} else {
		err = b.View(fn)
	}
	var de *damagedError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &de):
		return damaged(d.path, de.detail)
	case errors.Is(err, ErrNotFound):
		return err
	}
	return fmt.Errorf("dlq: %s: %s: %w", d.path, op, err)
}

// damagedError is returned inside a transaction; tx adds the path.
type damagedError struct{ detail string }

func (e *damagedError) Error() string { return "damaged: " + e.detail }

func damagedf(format string, args ...any) error {
	return &damagedError{detail: fmt.Sprintf(format, args...)}
}

func damaged(path, detail string) error {
	return fmt.Errorf("dlq: %s: %w: %s", path, ErrDamaged, detail)
}

// fromDamage reports whether a panic recovered in a deferred function
// comes from a damaged file rather than a bug: a memory fault (with
// SetPanicOnFault: bbolt read past what the file holds) or a panic raised
// inside bbolt itself (its checks of the pages it reads). It must be called
// by the deferred function directly, while the panicking stack is below.
func fromDamage(r any) bool {
	if _, fault := r.(interface{ Addr() uintptr }); fault {
		return true
	}
	pc := make([]uintptr, 64)
	frames := runtime.CallersFrames(pc[:runtime.Callers(3, pc)])
	panicking := false
	for {
		f, more := frames.Next()
		switch {
		case f.Function == "runtime.gopanic":
			panicking = true
		case panicking && !strings.HasPrefix(f.Function, "runtime."):
			return strings.HasPrefix(f.Function, "go.etcd.io/bbolt")
		}
		if !more {
			return false
		}
	}
}
