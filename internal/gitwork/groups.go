package gitwork

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/runnerdev/runner/internal/proc"
)

// survivorWait bounds how long EndLeftovers waits for a group it killed
// to be gone.
const survivorWait = 5 * time.Second

// Groups is a directory where the processes of a job record the git
// commands they run, each by an empty file while it runs. The record is
// made before git is started, "starting-<n>.<owner pid>-<owner start>",
// and named after its process group once there is one: "<group
// id>-<leader start>.<owner pid>-<owner start>" (start times as
// proc.StartTime gives them). git dies with its runner; the hooks it
// started live on, and may still write to the repository when the next
// process of the job starts, and a git killed in a ref update leaves its
// lock files. That process calls EndLeftovers before it reads the
// repository. A process killed between starting git and naming its group
// leaves a record without a group: its git dies with it (its
// parent-death signal), and only its lock files are left to remove.
type Groups struct {
	Dir string
}

// starts numbers the records of this process's git commands.
var starts atomic.Uint64

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

// record is a git command's record in Groups while it runs.
type record struct {
	dir  string
	path string // "": not made
}

// start makes the record of a git command about to be started. A record
// it fails to make is only a group not ended, and lock files not removed,
// after a crash.
func (g *Groups) start() *record {
	r := &record{dir: g.Dir}
	path := filepath.Join(g.Dir, fmt.Sprintf("starting-%d.%s", starts.Add(1), Self()))
	err := os.WriteFile(path, nil, 0o600)
	if errors.Is(err, os.ErrNotExist) && os.MkdirAll(g.Dir, 0o700) == nil {
		err = os.WriteFile(path, nil, 0o600)
	}
	if err == nil {
		r.path = path
	}
	return r
}

// started is the proc.GroupHook that names the record after the group
// git runs in.
func (r *record) started(pgid int) (done func()) {
	if r.path != "" {
		leader, _ := proc.StartTime(pgid)
		path := filepath.Join(r.dir, fmt.Sprintf("%d-%d.%s", pgid, leader, Self()))
		if os.Rename(r.path, path) == nil {
			r.path = path
		}
	}
	return r.end
}

// end removes the record: the command is done.
func (r *record) end() {
	if r.path != "" {
		_ = os.Remove(r.path)
		r.path = ""
	}
}

// EndLeftovers ends what is left of the git commands of the job's
// processes that died (the hooks of a merge, mostly): each recorded group
// whose owner no longer runs gets SIGTERM, then SIGKILL, and EndLeftovers
// returns once they are gone; then it removes the lock files of refs that
// those left in repo's repository (RemoveRefLocks), which would make
// every later branch deletion (or update of that ref) fail. The records
// of processes that run are left alone.
func (g *Groups) EndLeftovers(ctx context.Context, repo Git) error {
	since, err := g.endGroups()
	if err != nil || since.IsZero() {
		return err
	}
	return repo.RemoveRefLocks(ctx, since)
}

// endGroups is EndLeftovers' ending of the groups. since is when the
// first of the dead owners started (zero when there was none, or it is
// not known): a git of theirs that died in a ref update may have left its
// lock files, made since then.
func (g *Groups) endGroups() (since time.Time, err error) {
	entries, err := os.ReadDir(g.Dir)
	if errors.Is(err, os.ErrNotExist) {
		return time.Time{}, nil
	}
	if err != nil {
		return time.Time{}, fmt.Errorf("the job's git processes: %w", err)
	}
	var errs []error
	for _, e := range entries {
		var pgid, owner, n int
		var start, ownerStart uint64
		grouped := true
		if _, err := fmt.Sscanf(e.Name(), "%d-%d.%d-%d", &pgid, &start, &owner, &ownerStart); err != nil {
			if _, err := fmt.Sscanf(e.Name(), "starting-%d.%d-%d", &n, &owner, &ownerStart); err != nil {
				continue // not a record
			}
			grouped = false
		}
		if proc.Runs(owner, ownerStart) {
			continue
		}
		if started, ok := proc.StartedAt(ownerStart); ok && (since.IsZero() || started.Before(since)) {
			since = started
		}
		if grouped {
			if err := proc.EndGroup(pgid, start, survivorWait); err != nil {
				errs = append(errs, err)
				continue
			}
		}
		_ = os.Remove(filepath.Join(g.Dir, e.Name()))
	}
	return since, errors.Join(errs...)
}
