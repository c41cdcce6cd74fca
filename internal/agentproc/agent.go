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
)

// Agent is the agent's side of the protocol: it runs the tasks it reads
// with a TaskRunner, one at a time, and writes what they do.
type Agent struct {
	// writeMu orders writes; it is apart from mu so that a write blocked
	// on a full pipe never keeps the reader from an answer.
	writeMu sync.Mutex
	enc     *json.Encoder

	mu      sync.Mutex // guards the fields below
	current string     // the dispatch id of the task running; "" between tasks
	seq     uint64
	waits   map[uint64]chan message // answers awaited (ack, slot), by seq
	broken  context.CancelCauseFunc // stops Serve when out cannot be written
}

// NewAgent returns an agent that writes its messages on out (its stdout).
func NewAgent(out io.Writer) *Agent {
	return &Agent{enc: json.NewEncoder(out), waits: map[uint64]chan message{}}
}

// Emit sends an event of the task running (the executor's Emit).
func (a *Agent) Emit(e eventlog.Event) {
	a.mu.Lock()
	id := a.current
	a.mu.Unlock()
	a.send(message{Type: typeEvent, DispatchID: id, Event: &e})
}

// Live is where a Runner of the agent's shows its items' output as it
// comes: output messages to the coordinator, which shows them.
func (a *Agent) Live() *itemtask.Live {
	return &itemtask.Live{Stdout: outputSender{a, "stdout"}, Stderr: outputSender{a, "stderr"}}
}

// outputSender sends what it is given (whole lines) as output messages
// of the task running.
type outputSender struct {
	a      *Agent
	stream string
}

func (o outputSender) Write(p []byte) (int, error) {
	o.a.mu.Lock()
	id := o.a.current
	o.a.mu.Unlock()
	if err := o.a.send(message{Type: typeOutput, DispatchID: id, Stream: o.stream, Text: string(p)}); err != nil {
		return 0, err
	}
	return len(p), nil
}

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
	if err := a.send(message{Type: typeReady, PID: os.Getpid()}); err != nil {
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

// read reads the coordinator's messages: tasks go to tasks, answers to the
// requests that wait for them. It returns why it stopped.
func (a *Agent) read(ctx context.Context, in io.Reader, tasks chan<- itemtask.Task) error {
	dec := json.NewDecoder(in)
	dec.UseNumber()
	for {
		var m message
		switch err := dec.Decode(&m); {
		case errors.Is(err, io.EOF):
			return errCoordinatorGone
		case err != nil:
			return fmt.Errorf("agent: reading the coordinator: %w", err)
		}
		switch m.Type {
		case typeTask:
			if m.Task == nil {
				return fmt.Errorf("agent: a task message without a task")
			}
			select {
			case tasks <- *m.Task:
			case <-ctx.Done():
				return context.Cause(ctx)
			}
		case typeAck, typeSlot:
			a.mu.Lock()
			ch, ok := a.waits[m.Seq]
			if ok && m.DispatchID == a.current {
				delete(a.waits, m.Seq)
				ch <- m // buffered: the waiter may have given up
			}
			a.mu.Unlock()
		default:
			return fmt.Errorf("agent: unknown message %q from the coordinator", m.Type)
		}
	}
}

// run runs one task and says how it ended.
func (a *Agent) run(ctx context.Context, t itemtask.Task, runner itemtask.Runner) {
	a.mu.Lock()
	a.current = t.DispatchID
	a.mu.Unlock()
	slot := &remoteSlot{a: a, id: t.DispatchID}
	save := func(rec itemtask.StepRecord) error {
		_, err := a.request(ctx, message{Type: typeCheckpoint, DispatchID: t.DispatchID, Step: &rec})
		return err
	}
	out, err := runner.Run(ctx, t, slot, save)
	a.mu.Lock()
	a.current = ""
	a.mu.Unlock()
	if err != nil {
		a.send(message{Type: typeAbandoned, DispatchID: t.DispatchID, Error: err.Error()})
		return
	}
	a.send(message{Type: typeOutcome, DispatchID: t.DispatchID, Outcome: &out})
}

// request sends m and waits for its answer; an answer with an error
// returns it.
func (a *Agent) request(ctx context.Context, m message) (message, error) {
	answer := make(chan message, 1)
	a.mu.Lock()
	a.seq++
	m.Seq = a.seq
	a.waits[m.Seq] = answer
	a.mu.Unlock()
	defer func() {
		a.mu.Lock()
		delete(a.waits, m.Seq)
		a.mu.Unlock()
	}()
	if err := a.send(m); err != nil {
		return message{}, err
	}
	select {
	case r := <-answer:
		if r.Error != "" {
			return r, fmt.Errorf("%s %d: %s", m.Type, m.Seq, r.Error)
		}
		return r, nil
	case <-ctx.Done():
		return message{}, context.Cause(ctx)
	}
}

// send writes one message; when it cannot, the agent stops.
func (a *Agent) send(m message) error {
	a.writeMu.Lock()
	err := a.enc.Encode(m)
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

// remoteSlot is the coordinator's slot of the task running, held and given
// back over the protocol.
type remoteSlot struct {
	a  *Agent
	id string
}

func (s *remoteSlot) Release() {
	s.a.send(message{Type: typeRelease, DispatchID: s.id})
}

func (s *remoteSlot) Acquire(ctx context.Context) error {
	_, err := s.a.request(ctx, message{Type: typeAcquire, DispatchID: s.id})
	return err
}
