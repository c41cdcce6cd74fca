package workspace

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/runnerdev/runner/internal/gitwork"
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

// checkoutLock is the file, in the repository's common git directory (one
// for all its worktrees), whose flock runner's final merges into the
// repository's checkouts hold in turn; its record is a checkoutHolder.
const checkoutLock = "runner-merge.lock"

// lockPoll is how often a final merge that waits for the checkout lock
// tries it again.
const lockPoll = 50 * time.Millisecond

// checkoutHolder is the checkout lock's record: who holds it, for those
// who wait; the merge it makes and where its git commands are recorded,
// for the one after it should it die in its merge.
type checkoutHolder struct {
	Who     string `json:"who"`
	Self    string `json:"self"`    // its gitwork.Self
	Tip     string `json:"tip"`     // the job branch's commit it merges
	Message string `json:"message"` // its merge commit's message
	Groups  string `json:"groups"`  // its gitwork.Groups directory
}

// lockCheckout takes the lock under which the final merges of all runner
// processes into the repository's checkouts take turns, so that each
// checks the checkout it merges into while no other merge changes it.
// While another process holds it, it waits, saying so once on w, until
// ctx is done. Once it holds it, it ends what a holder that died left: the
// hooks its git started, and its merge half made in the checkout.
func (t *Tree) lockCheckout(ctx context.Context, w io.Writer) (unlock func(), err error) {
	dir, err := t.User.CommonDir(ctx)
	if err != nil {
		return nil, err
	}
	wait := func(f *os.File) error { return waitCheckout(ctx, f, w) }
	return hold(filepath.Join(dir, checkoutLock), wait, func() ([]byte, error) { return t.checkoutRecord(ctx) }, func(data []byte, since time.Time) error {
		dead := holder(data)
		if dead.Tip == "" {
			return nil // killed while it wrote its record: it merged nothing yet
		}
		if err := t.undoMergeOf(context.WithoutCancel(ctx), dead, since); err != nil {
			return fmt.Errorf("undoing the merge that %s left in your checkout: %w", dead.Who, err)
		}
		return nil
	})
}

// checkoutRecord is this process's record in the checkout lock.
func (t *Tree) checkoutRecord(ctx context.Context) ([]byte, error) {
	tip, err := t.User.Tip(ctx, t.JobBranch)
	if err != nil {
		return nil, err
	}
	return json.Marshal(checkoutHolder{
		Who:     fmt.Sprintf("runner job %s (pid %d, since %s)", t.JobID, os.Getpid(), time.Now().Format(time.DateTime)),
		Self:    gitwork.Self(),
		Tip:     tip,
		Message: t.mergeMessage(),
		Groups:  t.Git.Groups.Dir,
	})
}

// undoMergeOf ends the hooks that the git of dead, a holder of the
// checkout lock that died, left running, removes the lock files its git
// left (made since it wrote its record, at since: git killed in a ref
// update, or by SIGKILL, does not remove them), and undoes its merge
// where it is half made in the checkout: in progress with its message,
// or the start of it (git writes MERGE_MSG after MERGE_HEAD, and keeps
// them until its post-merge hook has run, the merge commit made), or its
// result staged with no MERGE_HEAD (git killed in a
// pre-merge-commit hook). A merge it made stays; anything else is the
// user's, and left.
func (t *Tree) undoMergeOf(ctx context.Context, dead checkoutHolder, since time.Time) error {
	gitwork.AwaitExit(dead.Self)
	user := t.User
	if dead.Groups != "" {
		if err := (&gitwork.Groups{Dir: dead.Groups}).EndLeftovers(ctx, user); err != nil {
			return err
		}
	}
	if err := user.RemoveMergeLocks(ctx, since); err != nil {
		return err
	}
	head, message, err := user.MergeHead(ctx)
	if err != nil {
		return err
	}
	if head == "" {
		left, err := user.HoldsMergeOf(ctx, dead.Tip)
		if err != nil || !left {
			return err
		}
	} else if head != dead.Tip || !strings.HasPrefix(dead.Message, message) {
		return nil
	}
	return user.UndoMerge(ctx)
}

// waitCheckout takes f's flock, waiting while another process holds it.
func waitCheckout(ctx context.Context, f *os.File, w io.Writer) error {
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
			data := make([]byte, 64<<10)
			n, _ := f.ReadAt(data, 0)
			who := holder(data[:n]).Who
			if who == "" {
				who = "another runner process"
			}
			fmt.Fprintf(w, "runner: waiting for %s to end its merge into this repository\n", who)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("while waiting for another merge into this repository: %w", context.Cause(ctx))
		case <-time.After(lockPoll):
		}
	}
}

// holder reads the holder that a record in the checkout lock names; the
// zero holder when it names none.
func holder(data []byte) checkoutHolder {
	var h checkoutHolder
	_ = json.Unmarshal(data, &h) // a holder killed while it wrote named none
	return h
}
