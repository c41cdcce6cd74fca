// Package itemtask is the seam between a MapReduce job's engine
// (mapreduce) and the places its items run (this process, `runner agent`
// subprocesses, NATS workers): the data that travels between them and the
// contract each place honours.
//
// The engine turns an item's attempt into a Task and gives it to a
// Dispatcher, which a Backend opened for the job with a read-only view of
// it (Job) and the engine's side (Host). The dispatcher runs the task
// somewhere, reporting checkpoints, events and slot releases to the Host
// as its Capabilities allow, and returns an Outcome; once the engine has
// recorded it, it calls Recorded, so that a dispatcher whose outcomes are
// messages acknowledges one only then. The package imports only leaves:
// dispatchers never import the engine.
package itemtask

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/runnerdev/runner/internal/eventlog"
	"github.com/runnerdev/runner/internal/jsonvalue"
	"github.com/runnerdev/runner/internal/state"
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
	// Run is the run of the job that sends the task (first run, resume,
	// dlq retry), which the header of its output in the item's log
	// names; "" writes no header (a NATS worker's task: its coordinator
	// writes the header).
	Run string `json:"run,omitempty"`
	// Checkpoints are the steps of this attempt saved by a run that
	// ended before the attempt did (a crash, a lost runner): the attempt
	// goes on after them.
	Checkpoints []StepRecord `json:"checkpoints,omitempty"`
	// Tip is the commit the item's worktree starts from (map.isolation:
	// worktree on a NATS worker, whose clone has no job branch); "": the
	// job branch's tip.
	Tip string `json:"tip,omitempty"`
	// Value is the item already decoded, when the task is run in the
	// process that loaded it; nil: ItemValue decodes Item.
	Value any `json:"-"`
}

// FailedWith is the outcome of t's attempt failed before any of its steps
// could run (or after they ran, with data that could not be carried), of
// kind with err's message.
func (t Task) FailedWith(kind string, err error) Outcome {
	return Outcome{DispatchID: t.DispatchID, Failed: true, Failure: Failure{
		Attempt: t.Attempt, At: time.Now(), Kind: kind, ExitCode: -1, Message: err.Error(),
	}}
}

// ItemValue is the task's item as a value.
func (t Task) ItemValue() (any, error) {
	if t.Value != nil {
		return t.Value, nil
	}
	v, err := jsonvalue.Decode(t.Item)
	if err != nil {
		return nil, fmt.Errorf("task %s: item: %w", t.DispatchID, err)
	}
	return v, nil
}

// StepRecord is a step of an attempt, saved as a checkpoint: the record a
// job's journal keeps of its own steps, named here so that where items
// run (agents, NATS workers) never imports the job's state.
type StepRecord = state.StepRecord

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
	// Origin is who ran the task; zero for this machine.
	Origin Origin `json:"origin,omitzero"`
	// Usage is what the agents of the steps this run ran spent (claude:
	// steps whose agent reports it); nil when none did. The engine adds
	// the item's earlier attempts' to it.
	Usage *eventlog.AgentUsage `json:"usage,omitempty"`
}

// Origin is who ran an attempt, for its events and its log's header: a
// NATS worker in one delivery of its task. Its zero value is this
// machine (this process, or a `runner agent` process of it).
type Origin struct {
	Worker   string `json:"worker,omitempty"`
	Delivery int    `json:"delivery,omitempty"`
}

// Failure is one failed run of an item's agent template. Its JSON is the
// wire form results carry (NATS protocol 1 and later): the duration in
// whole milliseconds.
type Failure struct {
	Attempt    int           `json:"attempt"` // item-level attempt, from 1; 0 = next in the item's history
	At         time.Time     `json:"at"`
	Kind       string        `json:"kind"` // exit, signal, timeout, spawn, circuit_open, lost, ...
	ExitCode   int           `json:"exit_code"`
	Message    string        `json:"message"`
	StderrTail string        `json:"stderr_tail,omitempty"`
	Step       string        `json:"step,omitempty"`
	Duration   time.Duration `json:"-"`
}

// wireFailure is Failure as JSON carries it.
type wireFailure struct {
	plainFailure
	DurationMS int64 `json:"duration_ms"`
}

// plainFailure is Failure without its methods (no recursion).
type plainFailure Failure

// MarshalJSON writes f with its duration in milliseconds.
func (f Failure) MarshalJSON() ([]byte, error) {
	return json.Marshal(wireFailure{plainFailure(f), f.Duration.Milliseconds()})
}

// UnmarshalJSON reads what MarshalJSON writes, and the form without
// JSON names that runners before it kept in a job's item log (a job
// waiting to retry an item when it ended): its Go field names, the
// duration in nanoseconds.
func (f *Failure) UnmarshalJSON(data []byte) error {
	var w struct {
		wireFailure
		ExitCode   *int           `json:"ExitCode"`
		StderrTail *string        `json:"StderrTail"`
		Duration   *time.Duration `json:"Duration"`
	}
	if err := json.Unmarshal(data, &w); err != nil {
		return err
	}
	*f = Failure(w.plainFailure)
	f.Duration = time.Duration(w.DurationMS) * time.Millisecond
	if w.ExitCode != nil {
		f.ExitCode = *w.ExitCode
	}
	if w.StderrTail != nil {
		f.StderrTail = *w.StderrTail
	}
	if w.Duration != nil {
		f.Duration = *w.Duration
	}
	return nil
}

// Event is the failure as the item's events tell it.
func (f Failure) Event() eventlog.Failure {
	return eventlog.Failure{Step: f.Step, Attempt: f.Attempt, Kind: f.Kind, ExitCode: f.ExitCode, Message: f.Message, Duration: f.Duration, Stderr: f.StderrTail}
}

// KindLost is the failure kind of an attempt whose runners were lost.
const KindLost = "lost"

// KindWorktree is the failure kind of an item whose git worktree could
// not be made: git's message says why.
const KindWorktree = "worktree"

// KindTransfer is the failure kind of an attempt whose commits could not
// be brought back from where it ran (a NATS worker): their bundle did not
// verify, or does not start from the commit the item was given.
const KindTransfer = "transfer"

// ErrStale refuses what comes from a dispatch that is no longer its item's
// current one.
var ErrStale = errors.New("stale dispatch")

// Slot is a hold on one of the job's places to run a task (a
// retryv2.Slot): given back while a step waits out a delay, taken again
// before it goes on.
type Slot interface {
	Acquire(ctx context.Context) error
	Release()
}

// Runner runs the tasks of one job in the process it is in (the engine's
// runner of the agent template): for the job itself, a `runner agent`
// process or a NATS worker. It gives slot back while a step waits out a
// delay and saves each step with save before the next starts; an error,
// and no outcome, means the run did not reach an end.
type Runner interface {
	Run(ctx context.Context, t Task, slot Slot, save func(StepRecord) error) (Outcome, error)
}

// Dispatcher sends a job's tasks to where items run.
type Dispatcher interface {
	// Dispatch runs t to its end and returns how it ended. An error means
	// that it did not run to an end (its runner was lost, or ctx ended):
	// nothing is recorded of it, and the item stays pending.
	Dispatch(ctx context.Context, t Task) (Outcome, error)
	// Recorded tells that the engine recorded the outcome of dispatch id:
	// a dispatcher whose outcomes are messages acknowledges one only
	// then, so that a crash before the record leaves it to be read again.
	Recorded(ctx context.Context, dispatchID string)
	// Close stops the dispatcher once the items are done (or ctx ended):
	// its processes, connections, goroutines.
	Close() error
}

// Host is the side of a job that dispatches its tasks, which a dispatcher
// reports to. What comes from a dispatch that is not its item's current
// one (a late or repeated message) is refused with ErrStale and changes
// nothing.
type Host interface {
	// Checkpoint saves a step of the task's attempt; when it fails the
	// task must stop.
	Checkpoint(dispatchID string, rec StepRecord) error
	// Emit records an event of the task's run.
	Emit(dispatchID string, e eventlog.Event) error
	// Slot is the job's hold on a place to run the task, for a dispatcher
	// that gives it back while the task waits out a delay (and takes it
	// again before the task goes on); nil for a stale dispatch.
	// Dispatchers whose capacity lives elsewhere keep it for the whole
	// task.
	Slot(dispatchID string) Slot
	// JobEvent records an event of the job that no dispatch owns (a
	// duplicate result, a redelivery seen late).
	JobEvent(e eventlog.Event)
	// AppendLog adds text, the output of t's attempt that origin ran from
	// start on, to the item's log after the attempt's header (a log that
	// cannot be written does not fail the item).
	AppendLog(t Task, origin Origin, start time.Time, text string)
	// UpdateMeta changes the job's metadata under its lock and saves it
	// (the NATS dispatcher's epochs).
	UpdateMeta(fn func(*state.Meta)) error
}

// Job is what a dispatcher may read of the job whose items it runs.
type Job interface {
	ID() string
	Seed() uint64
	// AgentTimeout is map.agent_timeout; 0: none.
	AgentTimeout() time.Duration
	// Portable is the job as a process on another machine opens it (the
	// workflow copy, its variables after setup), as JSON.
	Portable() (json.RawMessage, error)
	// RunningItems are the items the item log last saw running, by
	// index, with their checkpoints.
	RunningItems() (map[int]state.ItemRecord, error)
	// Layout is where the job's files are in its directory.
	Layout() state.Layout
	// Repo is the git side of a job whose items run in worktrees
	// (map.isolation: worktree); nil for any other job.
	Repo() Repo
}

// Repo is the git side of a job whose items run in worktrees, in the
// repository of the job's process (the job's workspace.Worktrees): where
// the items start from and where their branches come back to when they
// run elsewhere.
type Repo interface {
	// Tip is the job branch's tip, which items start from.
	Tip(ctx context.Context) (string, error)
	// Base is where the job branch left the branch the job started on,
	// which the repository's clones made before the job likely have; ""
	// when not known.
	Base(ctx context.Context) string
	// ExportTip writes to path a bundle of commit sha (a tip) with the
	// history base lacks ("": all of it), which Clone.ImportTip reads.
	ExportTip(ctx context.Context, path, sha, base string) error
	// ImportItem brings back from the bundle at path (Clone.ExportItem's;
	// "": none, the branch made no commit) the branch b of an item given
	// tip ("": not known), checked.
	ImportItem(ctx context.Context, path string, b ItemBranch, tip string) error
	// CheckItemBranch fails, as making the item's worktree would (kind
	// KindWorktree), when git could not make the branch of item (index,
	// id) at commit at in the repository: a ref in its way. For items
	// whose worktrees are made elsewhere and whose branches come back.
	CheckItemBranch(ctx context.Context, index int, id, at string) error
}

// ItemBranch is an item's branch as a run elsewhere left it: its name,
// the commit its worktree started from and its head.
type ItemBranch struct{ Name, Base, Head string }

// Clone is the repository a process that runs some of a job's items
// for the job's own (a NATS worker) makes their worktrees in, its own.
type Clone interface {
	// Has reports whether it has commit sha.
	Has(ctx context.Context, sha string) bool
	// ImportTip fetches commit sha from the bundle at path
	// (Repo.ExportTip's).
	ImportTip(ctx context.Context, path, sha string) error
	// ExportItem writes to path a bundle of the commits branch has since
	// base, and returns its head; none when the head is base.
	ExportItem(ctx context.Context, path, branch, base string) (head string, err error)
	// Discard removes what a run of t left: its worktree, whatever a git
	// killed midway left of it, and its branch.
	Discard(ctx context.Context, t Task) error
}

// Capabilities are what a dispatcher does beyond running a task to its
// outcome; the engine checks them against the workflow before the job
// starts, and the conformance suite (dispatchtest) tests each one.
type Capabilities struct {
	// Checkpoints: each step is saved (Host.Checkpoint) before the next
	// starts, and a task sent again goes on after its Checkpoints.
	Checkpoints bool
	// LiveEvents: a task's events reach the Host while it runs, not only
	// with its outcome.
	LiveEvents bool
	// SlotRelease: the job's slot is given back while a step waits out a
	// delay.
	SlotRelease bool
	// Worktrees: items may run in git worktrees (map.isolation:
	// worktree).
	Worktrees bool
}

// Backend is a place where a job's items run: its name (in refusals:
// "NATS workers"), what it can do, and how its dispatcher is opened.
type Backend struct {
	Name string
	Can  Capabilities
	// Open makes the dispatcher of a job's map phase (or of a `dlq
	// retry`), reporting to host. It is called after setup, once per
	// run; the dispatcher is closed when the items are done. Setup that
	// waits (a connection, a process's start) ends with ctx.
	Open func(ctx context.Context, job Job, host Host) (Dispatcher, error)
}

// Opened is a job opened in a process that runs some of its items for the
// job's own (a NATS worker): the runner of its tasks, the masking of its
// secrets in what goes back, where each item's output is logged, and
// which step ends a run.
type Opened struct {
	Runner  Runner
	Mask    func(string) string
	LogPath func(itemID string) string
	// Git is where the items' worktrees are made (map.isolation:
	// worktree); nil without worktrees.
	Git Clone
	// Last reports whether rec is the last record of a run that goes on
	// to its outcome (the template's last step, not waiting to retry):
	// its checkpoint may travel with the outcome, as nothing runs after
	// it. Nil: none is.
	Last func(rec StepRecord) bool
}
