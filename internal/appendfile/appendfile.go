package appendfile

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"syscall"
)

// File is a file of lines open for appending. Each Write should be whole
// lines. A File holds a shared lock on the file until Close, so that Open
// in another process leaves the file's tail alone while this one writes.
// It is not safe for concurrent use.
type File struct {
	f   *os.File
	err error // an earlier write that was cut short
}

// Open opens (creating if needed, mode 0600) the file at path for appending.
// When no other File has it open, an incomplete last line — bytes after the
// last newline — is cut off first.
func Open(path string) (*File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	if err := lockAndRepair(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	return &File{f: f}, nil
}

// lockAndRepair cuts f's torn tail if it can lock f alone, and leaves a
// shared lock on it. A writer in another process holds a shared lock: its
// line in progress is not a torn tail, and a cut could race its append.
func lockAndRepair(f *os.File) error {
	fd := int(f.Fd())
	err := syscall.Flock(fd, syscall.LOCK_EX|syscall.LOCK_NB)
	switch {
	case err == nil:
		if err := cutTornTail(f); err != nil {
			return err
		}
	case !errors.Is(err, syscall.EWOULDBLOCK):
		return fmt.Errorf("lock: %w", err)
	}
	// Held exclusively only for the cut above: at most a moment's wait.
	if err := syscall.Flock(fd, syscall.LOCK_SH); err != nil {
		return fmt.Errorf("lock: %w", err)
	}
	return nil
}

// cutTornTail truncates f after its last newline, and syncs the cut so
// that what is appended next cannot land behind bytes that come back.
func cutTornTail(f *os.File) error {
	info, err := f.Stat()
	if err != nil {
		return err
	}
	size := info.Size()
	end := size
	buf := make([]byte, 32<<10)
	for end > 0 {
		chunk := buf[:min(int64(len(buf)), end)]
		if _, err := f.ReadAt(chunk, end-int64(len(chunk))); err != nil {
			return fmt.Errorf("read tail: %w", err)
		}
		if i := bytes.LastIndexByte(chunk, '\n'); i >= 0 {
			end -= int64(len(chunk) - i - 1)
			break
		}
		end -= int64(len(chunk))
	}
	if end == size {
		return nil
	}
	if err := f.Truncate(end); err != nil {
		return fmt.Errorf("cut torn last line: %w", err)
	}
	return f.Sync()
}

// Write appends p with one write. After a write that was cut short (part
// of p written), every later Write fails: its bytes would continue the torn
// line. The next Open cuts it.
func (f *File) Write(p []byte) (int, error) {
	if f.err != nil {
		return 0, f.err
	}
	n, err := f.f.Write(p)
	if err != nil && n > 0 {
		f.err = fmt.Errorf("an earlier write was cut short: %w", err)
	}
	return n, err
}

// Sync flushes the file to stable storage.
func (f *File) Sync() error { return f.f.Sync() }

// Close closes the file, which releases its lock.
func (f *File) Close() error { return f.f.Close() }

// Size is the file's size now.
func (f *File) Size() (int64, error) {
	info, err := f.f.Stat()
	if err != nil {
		return 0, err
	}
	return info.Size(), nil
}
