// Package agentproc runs a job's map items in `runner agent` subprocesses:
// the JSON-lines protocol between the job's process and its agents, the
// agent's side of it (Agent) and a dispatcher keeping a pool of agents
// (New). What a task's run tells the job is the remote Host's codec
// (itemtask/remote), carried on the agent's stdin and stdout.
package agentproc

import (
	"github.com/runnerdev/runner/internal/itemtask"
	"github.com/runnerdev/runner/internal/itemtask/remote"
)

// The protocol. Each frame is one JSON object on one line, with a "type".
// An agent runs one task at a time.
//
// The coordinator (the process that runs the job) writes on the agent's
// stdin:
//
//	task   {task}      run this task (itemtask.Task)
//	reply  {id, reply} the answer (remote.Reply) to the agent's request id
//
// The agent writes on its stdout, and nothing else goes there:
//
//	ready     {pid}                 first: the job is open, tasks may come
//	msg       {id, msg}             what the task's run tells the job (remote.Msg, naming the
//	                                task's dispatch id); a request (checkpoint, acquire) has an
//	                                id, and the run waits for its reply
//	outcome   {outcome}             the task ran to an end (itemtask.Outcome)
//	abandoned {dispatch_id, error}  the task stopped without an end; its item stays pending
//
// A msg of a dispatch that is not the task's is stale: it is ignored, and
// a request among them is answered with an error. The agent exits when
// its stdin ends: the coordinator is done with it, or died. A task running
// then is stopped (its commands are stopped as on an interrupt) and says
// nothing more.
const (
	typeTask      = "task"
	typeReply     = "reply"
	typeReady     = "ready"
	typeMsg       = "msg"
	typeOutcome   = "outcome"
	typeAbandoned = "abandoned"
)

// frame is any frame of the protocol; the fields used depend on Type.
type frame struct {
	Type       string            `json:"type"`
	ID         uint64            `json:"id,omitempty"` // a request's, and its reply's
	Msg        *remote.Msg       `json:"msg,omitempty"`
	Reply      *remote.Reply     `json:"reply,omitempty"`
	PID        int               `json:"pid,omitempty"`
	Task       *itemtask.Task    `json:"task,omitempty"`
	Outcome    *itemtask.Outcome `json:"outcome,omitempty"`
	DispatchID string            `json:"dispatch_id,omitempty"` // abandoned
	Error      string            `json:"error,omitempty"`       // abandoned
}
