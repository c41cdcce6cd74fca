package agentproc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"

	"github.com/runnerdev/runner/internal/eventlog"
	"github.com/runnerdev/runner/internal/itemtask"
	"github.com/runnerdev/runner/internal/itemtask/remote"
)

// Agent is the agent's side of the protocol: it runs the tasks it reads
// with a TaskRunner, one at a time, and tells the coordinator what they
// do (a remote.Reporter per task, over the agent's stdout: the Agent is
// its transport).
type Agent struct {
	// writeMu orders writes; it is apart from mu so that a write blocked
	// on a full pipe never keeps the reader from an answer.
	writeMu sync.Mutex
	enc     *json.Encoder

	mu      sync.Mutex       // guards the fields below
	current *remote.Reporter // the task running's; nil between tasks
	seq     uint64
	waits   map[uint64]chan remote.Reply // answers awaited, by request id
	broken  context.CancelCauseFunc      // stops Serve when out cannot be written
}

var _ remote.Transport = (*Agent)(nil)

// NewAgent returns an agent that writes its messages on out (its stdout).
func NewAgent(out io.Writer) *Agent {
	return &Agent{enc: json.NewEncoder(out), waits: map[uint64]chan remote.Reply{}}
}

// Emit sends an event of the task running (the executor's Emit).
func (a *Agent) Emit(e eventlog.Event) {
	a.mu.Lock()
	rp := a.current
	a.mu.Unlock()
	if rp != nil {
		rp.Emit(e)
	}
}

// Live is where a Runner of the agent's shows its items' output as it
// comes: output messages to the coordinator, which shows them.
func (a *Agent) Live() *itemtask.Live { return remote.Output(a, nil) }

// errCoordinatorGone stops a task when the agent's stdin ends.
var errCoordinatorGone = errors.New("the coordinator closed the agent's input")

// Serve says ready, then runs the tasks read from in until in ends (it
// returns nil then) or ctx does. A task running then is stopped.
func (a *Agent) Serve(ctx context.Context, in io.Reader, runner itemtask.Runner) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	a.mu.Lock()
	a.broken = cancel
	a.mu.Unlock()
	if err := a.send(frame{Type: typeReady, PID: os.Getpid()}); err != nil {
		return err
	}
	tasks := make(chan itemtask.Task)
	go func() { cancel(a.read(ctx, in, tasks)) }()
	for {
		select {
		case t := <-tasks:
			a.run(ctx, t, runner)
		case <-ctx.Done():
			if err := context.Cause(ctx); !errors.Is(err, errCoordinatorGone) {
				return err
			}
			return nil
		}
	}
}

// read reads the coordinator's frames: tasks go to tasks, replies to the
// requests that wait for them. It returns why it stopped.
func (a *Agent) read(ctx context.Context, in io.Reader, tasks chan<- itemtask.Task) error {
	dec := json.NewDecoder(in)
	dec.UseNumber()
	for {
		var f frame
		switch err := dec.Decode(&f); {
		case errors.Is(err, io.EOF):
			return errCoordinatorGone
		case err != nil:
			return fmt.Errorf("agent: reading the coordinator: %w", err)
		}
		switch {
		case f.Type == typeTask && f.Task != nil:
			select {
			case tasks <- *f.Task:
			case <-ctx.Done():
				return context.Cause(ctx)
			}
		case f.Type == typeReply && f.Reply != nil:
			a.mu.Lock()
			if ch, ok := a.waits[f.ID]; ok {
				delete(a.waits, f.ID)
				ch <- *f.Reply // buffered: the waiter may have given up
			}
			a.mu.Unlock()
		default:
			return fmt.Errorf("agent: unknown message %q from the coordinator", f.Type)
		}
	}
}

// run runs one task and says how it ended.
func (a *Agent) run(ctx context.Context, t itemtask.Task, runner itemtask.Runner) {
	rp := remote.NewReporter(a, remote.Run{DispatchID: t.DispatchID, Index: t.Index, Attempt: t.Attempt}, 0)
	a.mu.Lock()
	a.current = rp
	a.mu.Unlock()
	out, err := runner.Run(ctx, t, rp, func(rec itemtask.StepRecord) error { return rp.Save(ctx, rec) })
	a.mu.Lock()
	a.current = nil
	a.mu.Unlock()
	if err != nil {
		a.send(frame{Type: typeAbandoned, DispatchID: t.DispatchID, Error: err.Error()})
		return
	}
	a.send(frame{Type: typeOutcome, Outcome: &out})
}

// Publish sends m (remote.Transport).
func (a *Agent) Publish(m remote.Msg) { _ = a.send(frame{Type: typeMsg, Msg: &m}) }

// Request sends m and waits for its reply (remote.Transport).
func (a *Agent) Request(ctx context.Context, m remote.Msg) (remote.Reply, error) {
	answer := make(chan remote.Reply, 1)
	a.mu.Lock()
	a.seq++
	id := a.seq
	a.waits[id] = answer
	a.mu.Unlock()
	defer func() {
		a.mu.Lock()
		delete(a.waits, id)
		a.mu.Unlock()
	}()
	if err := a.send(frame{Type: typeMsg, ID: id, Msg: &m}); err != nil {
		return remote.Reply{}, err
	}
	select {
	case r := <-answer:
		return r, nil
	case <-ctx.Done():
		return remote.Reply{}, context.Cause(ctx)
	}
}

// send writes one frame; when it cannot, the agent stops.
func (a *Agent) send(f frame) error {
	a.writeMu.Lock()
	err := a.enc.Encode(f)
	a.writeMu.Unlock()
	if err != nil {
		a.mu.Lock()
		broken := a.broken
		a.mu.Unlock()
		if broken != nil {
			broken(fmt.Errorf("agent: writing to the coordinator: %w", err))
		}
	}
	return err
}
