package state

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// ErrLocked is returned by Lock when another process holds the job's lock.
var ErrLocked = errors.New("locked by another process")

// Lock takes the job's lock: exclusive for the process that runs the job,
// shared for processes that run some of its items. Unlock releases it.
//
// The lock is an fcntl (POSIX) record lock, which belongs to the process
// that took it, not to a file descriptor: a child forked at any moment
// does not share it (it ends with its process), whereas a flock would
// last while a child caught between fork and exec still holds a copy of
// the descriptor. It also means that a process must not open the lock
// file a second time: closing any descriptor of it drops the lock.
func (j *Job) Lock(shared bool) error {
	f, err := lockFile(j.Layout().Lock, shared)
	if err != nil {
		return fmt.Errorf("job %s: %w", j.Meta.ID, err)
	}
	j.lock = f
	return nil
}

// Unlock releases the lock taken by Lock or Create.
func (j *Job) Unlock() {
	if j.lock != nil {
		j.lock.Close()
		j.lock = nil
	}
}

func lockFile(path string, shared bool) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	lk := syscall.Flock_t{Type: syscall.F_WRLCK} // the whole file
	if shared {
		lk.Type = syscall.F_RDLCK
	}
	if err := syscall.FcntlFlock(f.Fd(), syscall.F_SETLK, &lk); err != nil {
		f.Close()
		if errors.Is(err, syscall.EAGAIN) || errors.Is(err, syscall.EACCES) {
			return nil, ErrLocked
		}
		return nil, fmt.Errorf("lock: %w", err)
	}
	return f, nil
}

// Owner returns the pid of a process that holds the job's lock, or 0 when
// none does. It only looks: it takes no lock, so it never makes a Lock
// fail. The process that holds the lock cannot see itself this way.
func (j *Job) Owner() (int, error) {
	f, err := os.Open(j.Layout().Lock)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("job %s: %w", j.Meta.ID, err)
	}
	defer f.Close()
	lk := syscall.Flock_t{Type: syscall.F_WRLCK}
	if err := syscall.FcntlFlock(f.Fd(), syscall.F_GETLK, &lk); err != nil {
		return 0, fmt.Errorf("job %s: lock: %w", j.Meta.ID, err)
	}
	if lk.Type == syscall.F_UNLCK {
		return 0, nil
	}
	return int(lk.Pid), nil
}

// checkOwner turns a job that its metadata says is running but whose lock
// no process holds into what it is: interrupted, with OwnerDied set and
// Finished at its last event. A process that runs a job takes its lock
// before it marks it running and records how the run ended before it lets
// go, so a free lock with the same running metadata on either side means
// the process died without a word (kill -9, a crash, a power cut).
func (j *Job) checkOwner(s Store) error {
	before := j.Meta
	if before.Status != Running {
		return nil
	}
	if pid, err := j.Owner(); err != nil || pid != 0 {
		return err
	}
	after, err := s.Open(before.ID)
	if err != nil {
		return err
	}
	j.Meta = after.Meta
	if after.Meta.Status != Running || after.Meta.PID != before.PID || after.Meta.ResumedCount != before.ResumedCount {
		return nil // it ended, or a resume took it on, while we looked
	}
	j.Meta.Status, j.Meta.OwnerDied = Interrupted, true
	j.Meta.Finished = j.Meta.Started
	if fi, err := os.Stat(j.Layout().Events); err == nil && fi.ModTime().After(j.Meta.Started) {
		j.Meta.Finished = fi.ModTime()
	}
	return nil
}
