// Package agentproc runs a job's map items in `runner agent` subprocesses:
// the JSON-lines protocol between the job's process and its agents, the
// agent's side of it (Agent) and a dispatcher keeping a pool of agents
// (New).
package agentproc

import (
	"github.com/runnerdev/runner/internal/eventlog"
	"github.com/runnerdev/runner/internal/itemtask"
)

// The protocol. Each message is one JSON object on one line, with a
// "type". An agent runs one task at a time; everything about a task
// carries its dispatch id, and a message with an id that is not the
// task's is stale: it is ignored, and a request among them is answered
// with an error.
//
// The coordinator (the process that runs the job) writes on the agent's
// stdin:
//
//	task   {task}                   run this task (itemtask.Task)
//	ack    {dispatch_id, seq, error} the checkpoint seq is saved (error: it is not; the task stops)
//	slot   {dispatch_id, seq, error} the slot that acquire seq asked for is held again (error: it cannot be)
//
// The agent writes on its stdout, and nothing else goes there:
//
//	ready      {pid}                            first: the job is open, tasks may come
//	event      {dispatch_id, event}             an event of the task's run (as the log writes it)
//	output     {dispatch_id, stream, text}      whole lines of the task's output, prefixed with its item's id (an agent started with --tag)
//	checkpoint {dispatch_id, seq, step}         a step of the task's attempt to save; the task waits for its ack
//	release    {dispatch_id}                    the task waits out a delay: its slot may serve another item
//	acquire    {dispatch_id, seq}               the delay is over: the task waits for its slot
//	outcome    {dispatch_id, outcome}           the task ran to an end (itemtask.Outcome)
//	abandoned  {dispatch_id, error}             the task stopped without an end; its item stays pending
//
// The agent exits when its stdin ends: the coordinator is done with it, or
// died. A task running then is stopped (its commands are stopped as on an
// interrupt) and says nothing more.
const (
	typeTask       = "task"
	typeAck        = "ack"
	typeSlot       = "slot"
	typeReady      = "ready"
	typeEvent      = "event"
	typeOutput     = "output"
	typeCheckpoint = "checkpoint"
	typeRelease    = "release"
	typeAcquire    = "acquire"
	typeOutcome    = "outcome"
	typeAbandoned  = "abandoned"
)

// answers are the answers of the agent's requests.
var answers = map[string]string{typeCheckpoint: typeAck, typeAcquire: typeSlot}

// message is any message of the protocol; the fields used depend on Type.
type message struct {
	Type       string               `json:"type"`
	DispatchID string               `json:"dispatch_id,omitempty"`
	Seq        uint64               `json:"seq,omitempty"`
	Error      string               `json:"error,omitempty"`
	PID        int                  `json:"pid,omitempty"`
	Task       *itemtask.Task       `json:"task,omitempty"`
	Event      *eventlog.Event      `json:"event,omitempty"`
	Step       *itemtask.StepRecord `json:"step,omitempty"`
	Outcome    *itemtask.Outcome    `json:"outcome,omitempty"`
	Stream     string               `json:"stream,omitempty"` // output: stdout or stderr
	Text       string               `json:"text,omitempty"`   // output
}

// errorText is err's message, or "" for nil.
func errorText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
