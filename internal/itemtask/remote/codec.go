package remote

import (
	"cmp"
	"context"
	"errors"
	"fmt"

	"github.com/runnerdev/runner/internal/eventlog"
	"github.com/runnerdev/runner/internal/itemtask"
)

// The kinds of Msg a run sends.
const (
	// KindStart asks the checkpoints the run goes on after (those saved
	// since its task was sent); the job answers once the run's slot is
	// held.
	KindStart = "start"
	// KindEvent is an event of the run, Seq-th of the run's.
	KindEvent = "event"
	// KindCheckpoint asks to save a step before the next one starts.
	KindCheckpoint = "checkpoint"
	// KindRelease says that a step waits out a delay: the job's slot may
	// serve another item.
	KindRelease = "release"
	// KindAcquire asks for the job's slot back once the delay is over.
	KindAcquire = "acquire"
	// KindOutput is whole lines of items' output, each prefixed with
	// its item's id and a tab (itemtask.Live); it names no run.
	KindOutput = "output"
)

// WaitsForSlot reports whether a request of kind may wait for one of the
// job's slots, as long as the job has none free: a transport that bounds
// its waits asks it again rather than give up.
func WaitsForSlot(kind string) bool { return kind == KindStart || kind == KindAcquire }

// Msg is what a run tells the job's side: its Kind, the run, and the
// fields of its kind. On NATS it is the body of a runner.progress.J
// message.
type Msg struct {
	Kind string `json:"kind"`
	Run
	Seq    int                  `json:"seq,omitempty"`    // event: its place among the run's events, from 1
	Event  *eventlog.Event      `json:"event,omitempty"`  // event
	Step   *itemtask.StepRecord `json:"step,omitempty"`   // checkpoint
	Stream string               `json:"stream,omitempty"` // output: stdout or stderr
	Text   string               `json:"text,omitempty"`   // output
}

// Run names one run of an attempt's task: the dispatch it runs for (an
// agent's), or the item's attempt, the coordinator's epoch that published
// its task, the times it sent it again (natsconn.Task.Sent), the server's
// delivery and the worker (a NATS worker's).
type Run struct {
	DispatchID string `json:"dispatch_id,omitempty"`
	Index      int    `json:"index"`
	Attempt    int    `json:"attempt"`
	Epoch      int    `json:"epoch"`
	Sent       int    `json:"sent,omitempty"`
	Delivery   int    `json:"delivery"`
	Worker     string `json:"worker"`
}

// ID is the run's place among its task's runs.
func (r Run) ID() RunID { return RunID{r.Epoch, r.Sent, r.Delivery} }

// RunID orders the runs of an attempt's task: a later run's is greater;
// a task sent again is delivered from 1 again, after all deliveries of
// the message before.
type RunID struct {
	Epoch, Sent, Delivery int
}

// String is the run as its events are recorded with ("run_id"): epoch,
// times sent again, delivery, as in "2.0.1".
func (a RunID) String() string { return fmt.Sprintf("%d.%d.%d", a.Epoch, a.Sent, a.Delivery) }

// ParseRunID reads a RunID's String; ok is false for anything else.
func ParseRunID(s string) (id RunID, ok bool) {
	var rest string
	n, _ := fmt.Sscanf(s, "%d.%d.%d%s", &id.Epoch, &id.Sent, &id.Delivery, &rest)
	return id, n == 3
}

// Before reports whether a names a run older than b.
func (a RunID) Before(b RunID) bool {
	return cmp.Or(cmp.Compare(a.Epoch, b.Epoch), cmp.Compare(a.Sent, b.Sent), cmp.Compare(a.Delivery, b.Delivery)) < 0
}

// Reply answers a request. Unknown: no dispatch of the job's side waits
// for the run (a process resuming the job has not reached its item yet):
// the run goes on as it would without an answer. Error: the run must
// stop, and Term says that its task is to be dropped (its attempt is no
// longer its item's), not run again.
type Reply struct {
	Unknown     bool                  `json:"unknown,omitempty"`
	Error       string                `json:"error,omitempty"`
	Term        bool                  `json:"term,omitempty"`
	Checkpoints []itemtask.StepRecord `json:"checkpoints,omitempty"` // start
}

// Transport carries a run's messages to the job's side.
type Transport interface {
	// Publish sends m without waiting: one lost only delays what the job
	// learns.
	Publish(m Msg)
	// Request sends m and waits for its answer; ErrUnheard when no answer
	// that counts comes, else the transport's failure or ctx's cause.
	Request(ctx context.Context, m Msg) (Reply, error)
}

// ErrUnheard is a request that got no answer that counts: no one
// listens, no answer came in time, or the job's side does not know the
// run (Reply.Unknown). The run goes on as it would without an answer.
var ErrUnheard = errors.New("no answer from the coordinator")

// Refusal is the job's answer that a run must stop; Term says its task is
// to be dropped, not run again.
type Refusal struct {
	Reason string
	Term   bool
}

func (r *Refusal) Error() string { return "the coordinator stopped the run: " + r.Reason }
