// Package jobdlq is a job's bbolt dead-letter queue (package dlq) as the
// map phase and `dlq retry` use it (mapreduce.RetryQueue). The map phase
// writes through one dlq.Writer (its failures' entries committed
// together, the file open only a while at a time) and waits out another
// process's hold; a `dlq retry` holds it for its whole life (Hold),
// recording who it is so that another process can name it. Leases name
// their process so that a lease of a process that died is free at once.
package jobdlq

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/runnerdev/runner/dlq"
	"github.com/runnerdev/runner/internal/proc"
	"github.com/runnerdev/runner/mapreduce"
)

// claimLease is how long a `dlq retry` process holds an item it runs; a
// lease is free earlier once its process is gone (see ownerGone).
const claimLease = 24 * time.Hour

// openDB is dlq.Open as Hold and OpenReader call it (the map phase's
// dlq.Writer opens the file itself); tests count the opens through it.
var openDB = dlq.Open

// Queue is a job's bbolt dead-letter queue as mapreduce sees it. Until
// Hold, every operation goes through one dlq.Writer, which keeps the file
// open for a few milliseconds at a time, and waits for another process's
// lock as long as ctx lasts (saying so once on stderr, with the holder's
// name when it left one), so that a job never fails because someone else
// holds its DLQ for a while. After Hold, every operation uses the one
// open file. Close closes it.
type Queue struct {
	ctx    context.Context
	jobID  string
	path   string
	opts   dlq.Options
	w      *dlq.Writer
	owner  string               // this process's name in leases (claimOwner)
	leased map[string]dlq.Lease // items Claim found leased to another process
	held   *dlq.DB              // the file, open from Hold to Close
	stderr io.Writer
	once   sync.Once
}

// Open returns the queue of job jobID in the file at path; ctx bounds
// every wait for another process's hold, which it tells stderr once.
func Open(ctx context.Context, jobID, path string, stderr io.Writer) *Queue {
	q := &Queue{ctx: ctx, jobID: jobID, path: path, owner: claimOwner(), leased: map[string]dlq.Lease{}, stderr: stderr}
	q.opts = dlq.Options{Gone: ownerGone, Wait: ctx, Waiting: q.waiting}
	q.w = dlq.NewWriter(q.path, q.opts)
	return q
}

func (q *Queue) waiting() {
	q.once.Do(func() { fmt.Fprintf(q.stderr, "runner: %s; waiting\n", heldError(q.path, q.owner)) })
}

func (q *Queue) Add(items ...mapreduce.DeadLetter) error {
	var entries []dlq.Entry
	for _, it := range items {
		for _, f := range it.Failures {
			entries = append(entries, dlq.Entry{
				JobID: q.jobID, ItemID: it.ItemID, ItemIndex: it.ItemIndex, Item: it.Item,
				Failure: dlq.Failure{
					Attempt: f.Attempt, At: f.At, Kind: f.Kind, ExitCode: f.ExitCode, Message: f.Message,
					StderrTail: f.StderrTail, Step: f.Step, DurationMS: f.Duration.Milliseconds(),
				},
			})
		}
	}
	if q.held != nil {
		return q.held.Add(entries...)
	}
	return q.w.Add(entries...)
}

func (q *Queue) Remove(itemIDs ...string) error {
	return q.Update(func(d *dlq.DB) error {
		_, err := d.Remove(itemIDs...)
		return err
	})
}

func (q *Queue) Queued(itemIDs ...string) (map[string]bool, error) {
	out := map[string]bool{}
	err := q.use(true, func(d *dlq.DB) error {
		for _, id := range itemIDs {
			_, err := d.Get(id)
			switch {
			case err == nil:
				out[id] = true
			case !errors.Is(err, dlq.ErrNotFound):
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Each calls fn with every queued item's id and index; a job whose DLQ
// file was never made has none.
func (q *Queue) Each(fn func(itemID string, index int)) error {
	if q.held == nil {
		if _, err := os.Stat(q.path); errors.Is(err, os.ErrNotExist) {
			return nil
		}
	}
	return q.use(true, func(d *dlq.DB) error {
		return d.List(func(it dlq.Item) bool { fn(it.ItemID, it.ItemIndex); return true })
	})
}

// Claim leases an item to this process; one that another process holds is
// noted (Held). It is called from one goroutine at a time. While the queue
// is held (Hold), the hold is this process's lease on every item: no other
// process can claim one meanwhile, nor see a lease, so nothing is written
// and only a lease that a living process took before is respected.
func (q *Queue) Claim(itemID string) (bool, error) {
	if q.held != nil {
		l, leased, err := q.held.Holder(itemID)
		if leased && l.Owner != q.owner {
			q.leased[itemID] = l
		}
		return err == nil && (!leased || l.Owner == q.owner), err
	}
	var got []string
	err := q.Update(func(d *dlq.DB) (err error) {
		got, err = d.Claim(q.owner, time.Now().Add(claimLease), itemID)
		if err != nil || len(got) == 1 {
			return err
		}
		l, leased, err := d.Holder(itemID)
		if leased {
			q.leased[itemID] = l
		}
		return err
	})
	return len(got) == 1, err
}

// Held returns the items Claim found leased to another process, with
// their leases.
func (q *Queue) Held() map[string]dlq.Lease { return q.leased }

// Release gives up this process's lease of an item; while the queue is
// held there is none to give up (see Claim).
func (q *Queue) Release(itemID string) error {
	if q.held != nil {
		return nil
	}
	return q.Update(func(d *dlq.DB) error { return d.Release(q.owner, itemID) })
}

// Update runs fn with the queue open for writing.
func (q *Queue) Update(fn func(*dlq.DB) error) error { return q.use(false, fn) }

// View runs fn with the queue open for reading.
func (q *Queue) View(fn func(*dlq.DB) error) error { return q.use(true, fn) }

// use runs fn on the held file, or else on the map phase's one handle
// (dlq.Writer: open for a while, then closed for other processes; to
// read, the file opened read-only for fn alone when the handle is closed).
func (q *Queue) use(readOnly bool, fn func(*dlq.DB) error) error {
	switch {
	case q.held != nil:
		return fn(q.held)
	case readOnly:
		return q.w.View(fn)
	}
	return q.w.Use(fn)
}

// claimOwner names this process in DLQ leases: host:pid:start, where
// start is the process's start time (proc.StartTime; 0 where unknown).
func claimOwner() string {
	host, _ := os.Hostname()
	pid := os.Getpid()
	start, _ := proc.StartTime(pid)
	return fmt.Sprintf("%s:%d:%d", host, pid, start)
}

// ownerGone reports that a lease holder named by claimOwner was a process
// on this host that no longer runs (a dlq retry killed with -9), so its
// leases need not wait a day: its pid is free, or now names a process that
// started at another time. Holders on other hosts keep their leases until
// they expire.
func ownerGone(owner string) bool {
	host, pid, start, ok := parseOwner(owner)
	if me, _ := os.Hostname(); !ok || host != me {
		return false
	}
	if errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) {
		return true
	}
	now, known := proc.StartTime(pid)
	return start != 0 && known && now != start
}

// parseOwner splits a claimOwner name.
func parseOwner(owner string) (host string, pid int, start uint64, ok bool) {
	parts := strings.Split(owner, ":")
	if len(parts) != 3 {
		return "", 0, 0, false
	}
	pid, err := strconv.Atoi(parts[1])
	if err != nil || pid <= 0 {
		return "", 0, 0, false
	}
	start, _ = strconv.ParseUint(parts[2], 10, 64)
	return parts[0], pid, start, true
}

// DescribeOwner says who holds a lease, for people.
func DescribeOwner(owner string) string {
	if host, pid, _, ok := parseOwner(owner); ok {
		return fmt.Sprintf("process %d on %s", pid, host)
	}
	return fmt.Sprintf("%q", owner)
}
