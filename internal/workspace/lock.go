package workspace

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// The locks by which runner's processes take turns in a repository: files
// whose flock the holder holds. The holder of the job's merge lock and of
// the checkout lock writes a record of itself in the file (hold) and
// empties it when it lets go: a record found there by the next holder is
// that of a process that died holding the lock, maybe midway through a
// merge.

// flock takes the flock of the file at path, which it makes (and its
// directory) if need be, and returns the file open; unlock gives it back
// and closes it. Each call opens the file anew, so that two goroutines of
// one process exclude each other too. wait takes the flock; nil waits for
// it in flock(2).
func flock(path string, wait func(*os.File) error) (f *os.File, unlock func(), err error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, nil, err
	}
	f, err = os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, nil, err
	}
	if wait == nil {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
	} else {
		err = wait(f)
	}
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return f, func() {
		// Unlocked before the close: a child forked meanwhile holds a
		// copy of the descriptor until it execs, and the close alone
		// would leave the flock to it.
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
}

// admin runs fn holding the repository's worktree lock, the file at path
// (Tree.Admin).
func admin(path string, fn func() error) error {
	_, unlock, err := flock(path, nil)
	if err != nil {
		return fmt.Errorf("the repository's worktree lock: %w", err)
	}
	defer unlock()
	return fn()
}

// hold takes the lock at path (flock, with wait) and writes in it the
// record rec makes of this process. A record there already is a holder's
// that died: undo first ends and undoes what it left, given that record
// and the time it took the lock (the file's). Its record goes only then:
// should this process die meanwhile, the next holder finds it still (and
// after an error it stays, for the next holder). release empties the file
// and gives the lock back.
func hold(path string, wait func(*os.File) error, rec func() ([]byte, error), undo func(dead []byte, since time.Time) error) (release func(), err error) {
	f, unlock, err := flock(path, wait)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			unlock()
		}
	}()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if fi.Size() > 0 {
		dead := make([]byte, fi.Size())
		if _, err = f.ReadAt(dead, 0); err != nil {
			return nil, err
		}
		if err = undo(dead, fi.ModTime()); err != nil {
			return nil, err
		}
	}
	data, err := rec()
	if err == nil {
		err = f.Truncate(0)
	}
	if err == nil {
		_, err = f.WriteAt(data, 0)
	}
	if err != nil {
		return nil, err
	}
	return func() {
		_ = f.Truncate(0)
		unlock()
	}, nil
}
