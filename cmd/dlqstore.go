package cmd

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/runnerdev/runner/dlq"
	"github.com/runnerdev/runner/mapreduce"
	"github.com/runnerdev/runner/workflow/state"
)

// dlqFile is the name of a job's dead-letter queue in its directory.
const dlqFile = "dlq.db"

// claimLease is how long a `dlq retry` process holds an item it runs; a
// lease is free earlier once its process is gone (see ownerGone).
const claimLease = 24 * time.Hour

// jobDLQ is a job's bbolt dead-letter queue as mapreduce sees it.
type jobDLQ struct {
	jobID string
	path  string
	w     *dlq.Writer
	owner string // dlq retry: this process's claim name
}

func newJobDLQ(j *state.Job) *jobDLQ {
	path := j.Path(dlqFile)
	return &jobDLQ{jobID: j.Meta.ID, path: path, w: dlq.NewWriter(path, dlq.Options{})}
}

func (q *jobDLQ) Add(items ...mapreduce.DeadLetter) error {
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
	return q.w.Add(entries...)
}

func (q *jobDLQ) Remove(itemIDs ...string) error {
	return q.update(func(d *dlq.DB) error {
		_, err := d.Remove(itemIDs...)
		return err
	})
}

func (q *jobDLQ) Queued(itemIDs ...string) (map[string]bool, error) {
	out := map[string]bool{}
	d, err := dlq.Open(q.path, dlq.Options{ReadOnly: true})
	if err != nil {
		return nil, err
	}
	defer d.Close()
	for _, id := range itemIDs {
		_, err := d.Get(id)
		switch {
		case err == nil:
			out[id] = true
		case !errors.Is(err, dlq.ErrNotFound):
			return nil, err
		}
	}
	return out, nil
}

func (q *jobDLQ) Claim(itemID string) (bool, error) {
	var got []string
	err := q.update(func(d *dlq.DB) (err error) {
		got, err = d.Claim(q.owner, time.Now().Add(claimLease), itemID)
		return err
	})
	return len(got) == 1, err
}

func (q *jobDLQ) Release(itemID string) error {
	return q.update(func(d *dlq.DB) error { return d.Release(q.owner, itemID) })
}

// update runs fn with the queue open for writing.
func (q *jobDLQ) update(fn func(*dlq.DB) error) error {
	d, err := dlq.Open(q.path, dlq.Options{Gone: ownerGone})
	if err != nil {
		return err
	}
	err = fn(d)
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

// claimOwner names this process in DLQ leases: host:pid:start.
func claimOwner() string {
	host, _ := os.Hostname()
	return fmt.Sprintf("%s:%d:%d", host, os.Getpid(), time.Now().UnixNano())
}

// ownerGone reports that a lease holder named by claimOwner was a process
// on this host that no longer exists (a dlq retry killed with -9), so its
// leases need not wait a day. Holders on other hosts, or whose pid now
// belongs to another process, keep their leases until they expire.
func ownerGone(owner string) bool {
	parts := strings.Split(owner, ":")
	if len(parts) != 3 {
		return false
	}
	host, _ := os.Hostname()
	pid, err := strconv.Atoi(parts[1])
	if parts[0] != host || err != nil || pid <= 0 {
		return false
	}
	return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
}
