package natsconn

import (
	"fmt"

	"github.com/runnerdev/runner/internal/eventlog"
	"github.com/runnerdev/runner/internal/itemtask"
)

// ProgressSubject is where the workers running a job's tasks tell its
// coordinator how each run goes, on core NATS: runner.progress.J. Events
// and slot releases are published; a run's start, its checkpoints and the
// taking back of its slot are requests that the coordinator answers.
func ProgressSubject(key string) string { return "runner.progress." + key }

// The kinds of progress a run reports.
const (
	// ProgressStart: the run starts; the answer holds the checkpoints
	// the run goes on after (those saved since its task was published).
	ProgressStart = "start"
	// ProgressEvent: an event of the run, Seq-th of its delivery.
	ProgressEvent = "event"
	// ProgressCheckpoint: a step to save before the next one starts.
	ProgressCheckpoint = "checkpoint"
	// ProgressRelease: a step waits out a delay; the job's slot may serve
	// another item.
	ProgressRelease = "release"
	// ProgressAcquire: the delay is over; the answer comes once the job's
	// slot is held again.
	ProgressAcquire = "acquire"
	// ProgressOutput: whole lines of an item's output, each prefixed
	// with the item's id and a tab (itemtask.Live), published when the
	// job's spec asks for them (Spec.Live).
	ProgressOutput = "output"
)

// Progress is the body of a progress message: what one delivery of one
// attempt's task reports.
type Progress struct {
	Kind     string               `json:"kind"`
	Index    int                  `json:"index"`
	Attempt  int                  `json:"attempt"`
	Epoch    int                  `json:"epoch"`          // the task's
	Sent     int                  `json:"sent,omitempty"` // the task's
	Delivery int                  `json:"delivery"`
	Worker   string               `json:"worker"`
	Seq      int                  `json:"seq,omitempty"`    // event: its place among the delivery's events, from 1
	Event    *eventlog.Event      `json:"event,omitempty"`  // event
	Step     *itemtask.StepRecord `json:"step,omitempty"`   // checkpoint
	Stream   string               `json:"stream,omitempty"` // output: stdout or stderr
	Text     string               `json:"text,omitempty"`   // output
}

// RunID is the run p tells of.
func (p Progress) RunID() RunID { return RunID{p.Epoch, p.Sent, p.Delivery} }

// RunID names one run of an attempt's task: the epoch of the coordinator
// that published it, the times it sent it again (Task.Sent), the server's
// delivery of that message. A later run's is greater; a task sent again
// is delivered from 1 again, after all deliveries of the message before.
type RunID struct {
	Epoch, Sent, Delivery int
}

// String is the run as its events are recorded with ("run"): epoch,
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
	if a.Epoch != b.Epoch {
		return a.Epoch < b.Epoch
	}
	if a.Sent != b.Sent {
		return a.Sent < b.Sent
	}
	return a.Delivery < b.Delivery
}

// ProgressReply answers a progress request. Unknown: no dispatch of this
// coordinator waits for the task (a process resuming the job has not
// reached its item yet): the run goes on as it would without an answer.
// Error: the run must stop, and Term says that its task is to be dropped
// (its attempt is no longer its item's), not delivered again.
type ProgressReply struct {
	Unknown     bool                  `json:"unknown,omitempty"`
	Error       string                `json:"error,omitempty"`
	Term        bool                  `json:"term,omitempty"`
	Checkpoints []itemtask.StepRecord `json:"checkpoints,omitempty"` // start
}
