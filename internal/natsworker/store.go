package natsworker

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// A worker keeps its jobs' copies, with its items' logs and the git
// clones their worktrees are made in (workspace.WorkerRepo), in a store
// directory of its own, storePrefix* under the temporary directory, whose
// storeLock file it holds locked while it lives: a worker killed with -9
// cannot remove its store, so the next worker to start on the machine
// does, and nothing of the dead worker's is left.
const (
	storePrefix = "runner-worker-"
	storeLock   = "worker.lock"
)

// NewStore removes the stores in tmp whose workers are gone and makes a
// new one for this worker. release removes it.
func NewStore(tmp string) (dir string, release func(), err error) {
	sweepStores(tmp)
	dir, err = os.MkdirTemp(tmp, storePrefix)
	if err != nil {
		return "", nil, err
	}
	// Locked under another name first: a store's lock file, once there,
	// is locked for as long as its worker lives.
	lock, err := os.OpenFile(filepath.Join(dir, storeLock+".new"), os.O_CREATE|os.O_RDWR, 0o600)
	if err == nil {
		if err = syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err == nil {
			err = os.Rename(lock.Name(), filepath.Join(dir, storeLock))
		}
	}
	if err != nil {
		os.RemoveAll(dir)
		return "", nil, fmt.Errorf("worker store: %w", err)
	}
	return dir, func() {
		os.RemoveAll(dir)
		lock.Close()
	}, nil
}

// sweepStores removes the stores in tmp whose lock files nobody holds
// (their workers died), and the stores without a lock file a minute after
// they last changed (their workers died making them; making one takes
// microseconds). Other users' stores, whose lock files this process
// cannot open, are left alone.
func sweepStores(tmp string) {
	dirs, _ := filepath.Glob(filepath.Join(tmp, storePrefix+"*"))
	for _, dir := range dirs {
		lock, err := os.Open(filepath.Join(dir, storeLock))
		if errors.Is(err, fs.ErrNotExist) {
			if info, err := os.Stat(dir); err == nil && time.Since(info.ModTime()) > time.Minute {
				os.RemoveAll(dir)
			}
			continue
		}
		if err != nil {
			continue
		}
		if syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) == nil {
			os.RemoveAll(dir) // held until it is removed
		}
		lock.Close()
	}
}
