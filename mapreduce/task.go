package mapreduce

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"time"

	"github.com/runnerdev/runner/internal/eventlog"
	"github.com/runnerdev/runner/internal/job"
	"github.com/runnerdev/runner/internal/jsonvalue"
	"github.com/runnerdev/runner/mapreduce/items"
	"github.com/runnerdev/runner/retryv2"
)

// Task is one attempt of one item as it is sent to where items run. It is
// plain data (it travels as JSON to `runner agent` processes): with the
// job's stored workflow copy and its setup variables, it is all a runner
// needs.
type Task struct {
	JobID      string          `json:"job_id"`
	Index      int             `json:"index"`
	ItemID     string          `json:"item_id"`
	Item       json.RawMessage `json:"item"`
	Attempt    int             `json:"attempt"`
	DispatchID string          `json:"dispatch_id"`
	Seed       uint64          `json:"seed"`            // the job's: retry jitter derives from it
	Total      int             `json:"total,omitempty"` // the job's items: ${item_total}
	// Run is the run of the job that sends the task (RunFirst, RunResume,
	// RunDLQRetry), which the header of its output in the item's log
	// names; "" writes no header (a NATS worker's task: its coordinator
	// writes the header).
	Run string `json:"run,omitempty"`
	// Checkpoints are the steps of this attempt saved by a run that
	// ended before the attempt did (a crash, a lost runner): the attempt
	// goes on after them.
	Checkpoints []job.StepRecord `json:"checkpoints,omitempty"`

	// item is the item already decoded, when the task is run in the
	// process that loaded it: a task read from JSON decodes Item instead.
	item *Item
}

// Outcome is how a task's run ended.
type Outcome struct {
	DispatchID string        `json:"dispatch_id"`
	Failed     bool          `json:"failed,omitempty"`
	Failure    Failure       `json:"failure,omitzero"` // when Failed
	Output     string        `json:"output,omitempty"` // the agent's stdout, last 64 KiB
	Duration   time.Duration `json:"duration_ns"`
	// Branch is the item's git branch (map.isolation: worktree), which
	// the job merges back; Commits, which the job fills in, are the
	// commits the item made on it, oldest first.
	Branch  string   `json:"branch,omitempty"`
	Commits []string `json:"commits,omitzero"`
	// Worktree is the item's worktree and FilesModified the files its
	// commits changed, which the job fills in with Commits.
	Worktree      string   `json:"worktree,omitempty"`
	FilesModified []string `json:"files_modified,omitzero"`
	// Merged says that the job merged Branch into the job branch, and
	// Conflicts are the paths of a merge that conflicted (and was
	// aborted); the job fills them in.
	Merged    bool     `json:"merged,omitempty"`
	Conflicts []string `json:"conflicts,omitzero"`
	// Worker is the NATS worker that ran the task, in the Delivery-th
	// delivery of its message; "" for a task run by this machine.
	Worker   string `json:"worker,omitempty"`
	Delivery int    `json:"delivery,omitempty"`
	// Settle, when set, is called once the ledger has recorded the
	// outcome: a dispatcher whose outcomes are messages acknowledges one
	// only then, so that a crash before the record leaves it to be read
	// again.
	Settle func() `json:"-"`
}

// merge is what the events of the item's end say of its branch.
func (out Outcome) merge() eventlog.Merge {
	return eventlog.Merge{Branch: out.Branch, Commits: len(out.Commits), Merged: out.Merged, Conflicts: out.Conflicts}
}

// Dispatcher sends tasks to where items run: this process (Local),
// `runner agent` subprocesses, other machines.
type Dispatcher interface {
	// Dispatch runs t to its end and returns how it ended. An error means
	// that it did not run to an end (its runner was lost, or ctx ended):
	// nothing is recorded of it, and the item stays pending.
	Dispatch(ctx context.Context, t Task) (Outcome, error)
}

// Host is the side of a job that dispatches its tasks, which a dispatcher
// reports to while a task runs. What comes from a dispatch that is not its
// item's current one (a late or repeated message) is refused with
// ErrStale and changes nothing.
type Host interface {
	// Checkpoint saves a step of the task's attempt; when it fails the
	// task must stop.
	Checkpoint(dispatchID string, rec job.StepRecord) error
	// Emit records an event of the task's run.
	Emit(dispatchID string, e eventlog.Event) error
	// Slot is the job's hold on a place to run the task, for a dispatcher
	// that gives it back while the task waits out a delay (and takes it
	// again before the task goes on). Dispatchers whose capacity lives
	// elsewhere keep it for the whole task.
	Slot(dispatchID string) retryv2.Slot
}

// NewDispatcher makes the dispatcher of a job's map phase (or of a `dlq
// retry`), reporting to host. It is called after setup, once per run; a
// dispatcher that is also an io.Closer is closed when the items are done.
type NewDispatcher func(host Host) (Dispatcher, error)

// ErrStale refuses what comes from a dispatch that is no longer its item's
// current one.
var ErrStale = errors.New("stale dispatch")

// maxLost is how many times in a row an item's runner may be lost (the
// dispatch fails without an outcome) before the attempt counts as failed,
// so that an item that kills every runner it is given cannot loop for ever.
const maxLost = 3

// KindLost is the failure kind of an attempt whose runners were lost.
const KindLost = "lost"

// dispatchSeq numbers this process's dispatches; dispatchNonce tells them
// from another process's.
var (
	dispatchSeq   atomic.Uint64
	dispatchNonce = rand.Uint32()
)

// newDispatchID returns an id no other dispatch of any process has.
func newDispatchID(it *Item, attempt int) string {
	return fmt.Sprintf("%d.%d.%08x.%d", it.Index, attempt, dispatchNonce, dispatchSeq.Add(1))
}

// itemOf is the item a task is about.
func itemOf(t Task) (*Item, error) {
	if t.item != nil {
		return t.item, nil
	}
	v, err := jsonvalue.Decode(t.Item)
	if err != nil {
		return nil, fmt.Errorf("task %s: item: %w", t.DispatchID, err)
	}
	return &Item{Index: t.Index, ID: t.ItemID, Raw: t.Item, Value: v}, nil
}

// Item is one work item of a map phase.
type Item = items.Item
