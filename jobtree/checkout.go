package jobtree

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// checkoutLock is the file, in the repository's common git directory (one
// for all its worktrees), whose flock runner's final merges into the
// repository's checkouts hold in turn. Its holder writes who it is in it.
const checkoutLock = "runner-merge.lock"

// lockPoll is how often a final merge that waits for the checkout lock
// tries it again.
const lockPoll = 50 * time.Millisecond

// lockCheckout takes the lock under which the final merges of all runner
// processes into the repository's checkouts take turns, so that each
// checks the checkout it merges into while no other merge changes it.
// While another process holds it, it waits, saying so once on w, until
// ctx is done.
func (t *Tree) lockCheckout(ctx context.Context, w io.Writer) (unlock func(), err error) {
	dir, err := t.Git.In("").CommonDir(ctx)
	if err != nil {
		return nil, err
	}
	f, err := os.OpenFile(filepath.Join(dir, checkoutLock), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("the lock of final merges: %w", err)
	}
	if err := t.waitCheckout(ctx, f, w); err != nil {
		f.Close()
		return nil, err
	}
	holder := fmt.Sprintf("runner job %s (pid %d, since %s)", t.JobID, os.Getpid(), time.Now().Format(time.DateTime))
	_, _ = f.WriteAt([]byte(holder), 0) // only for the messages of those who wait
	return func() {
		_ = f.Truncate(0)
		// Unlocked before the close, as in Lock.
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
}

// waitCheckout takes f's flock, waiting while another process holds it.
func (t *Tree) waitCheckout(ctx context.Context, f *os.File, w io.Writer) error {
	told := false
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			if err != nil {
				return fmt.Errorf("the lock of final merges: %w", err)
			}
			return nil
		}
		if !told && w != nil {
			told = true
			fmt.Fprintf(w, "runner: waiting for %s to end its merge into this repository\n", holderOf(f))
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("while waiting for another merge into this repository: %w", context.Cause(ctx))
		case <-time.After(lockPoll):
		}
	}
}

// holderOf says who holds the checkout lock f, as its holder wrote.
func holderOf(f *os.File) string {
	buf := make([]byte, 200)
	n, _ := f.ReadAt(buf, 0)
	if holder := strings.TrimSpace(string(buf[:n])); holder != "" {
		return holder
	}
	return "another runner process"
}
