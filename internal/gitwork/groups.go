package gitwork

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/runnerdev/runner/internal/proc"
)

// survivorWait bounds how long EndLeftovers waits for a group it killed
// to be gone.
const survivorWait = 5 * time.Second

// Groups is a directory where the processes of a job record the process
// groups of the git commands they run, each by an empty file while it
// runs: "<group id>-<leader start>.<owner pid>-<owner start>" (start
// times as proc.StartTime gives them). git dies with its runner; the
// hooks it started live on, and may still write to the repository when
// the next process of the job starts. That process calls EndLeftovers
// before it reads the repository.
type Groups struct {
	Dir string
}

// Self is this process's pid and start time (proc.StartTime), as it
// names itself in its records and the lock files it holds; read from
// /proc on first use.
var Self = sync.OnceValue(func() string {
	start, _ := proc.StartTime(os.Getpid())
	return fmt.Sprintf("%d-%d", os.Getpid(), start)
})

// AwaitExit waits (5 s at most) until the process that self (a Self of
// it) names has exited: one that died holding a lock lets go of it a
// moment before, and only then do its gits get their parent-death signal
// and its records count as a dead process's.
func AwaitExit(self string) {
	var pid int
	var start uint64
	if _, err := fmt.Sscanf(self, "%d-%d", &pid, &start); err == nil {
		proc.AwaitExit(pid, start, survivorWait)
	}
}

// record is the proc.GroupHook that records a git command's group while it
// runs. A group it fails to record is only not ended after a crash.
func (g *Groups) record(pgid int) (done func()) {
	start, _ := proc.StartTime(pgid)
	path := filepath.Join(g.Dir, fmt.Sprintf("%d-%d.%s", pgid, start, Self()))
	err := os.WriteFile(path, nil, 0o600)
	if errors.Is(err, os.ErrNotExist) && os.MkdirAll(g.Dir, 0o700) == nil {
		err = os.WriteFile(path, nil, 0o600)
	}
	if err != nil {
		return func() {}
	}
	return func() { _ = os.Remove(path) }
}

// EndLeftovers ends what is left of the git commands of the job's
// processes that died (the hooks of a merge, mostly): each recorded group
// whose owner no longer runs gets SIGTERM, then SIGKILL, and EndLeftovers
// returns once they are gone. The records of processes that run are left
// alone. since is when the first of the dead owners started (zero when
// there was none, or it is not known): a git of theirs that died in a ref update may have left
// its lock files (RemoveRefLocks), made since then.
func (g *Groups) EndLeftovers() (since time.Time, err error) {
	entries, err := os.ReadDir(g.Dir)
	if errors.Is(err, os.ErrNotExist) {
		return time.Time{}, nil
	}
	if err != nil {
		return time.Time{}, fmt.Errorf("the job's git processes: %w", err)
	}
	var errs []error
	for _, e := range entries {
		var pgid, owner int
		var start, ownerStart uint64
		if _, err := fmt.Sscanf(e.Name(), "%d-%d.%d-%d", &pgid, &start, &owner, &ownerStart); err != nil {
			continue // not a record
		}
		if proc.Runs(owner, ownerStart) {
			continue
		}
		if started, ok := proc.StartedAt(ownerStart); ok && (since.IsZero() || started.Before(since)) {
			since = started
		}
		if err := proc.EndGroup(pgid, start, survivorWait); err != nil {
			errs = append(errs, err)
			continue
		}
		_ = os.Remove(filepath.Join(g.Dir, e.Name()))
	}
	return since, errors.Join(errs...)
}
