package agentproc

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/runnerdev/runner/internal/eventlog"
	"github.com/runnerdev/runner/internal/itemtask"
	"github.com/runnerdev/runner/internal/itemtask/remote"
	"github.com/runnerdev/runner/internal/testkit"
)

// runnerFunc is a itemtask.Runner made of a function.
type runnerFunc func(ctx context.Context, t itemtask.Task, slot itemtask.Slot, save func(itemtask.StepRecord) error) (itemtask.Outcome, error)

func (f runnerFunc) Run(ctx context.Context, t itemtask.Task, slot itemtask.Slot, save func(itemtask.StepRecord) error) (itemtask.Outcome, error) {
	return f(ctx, t, slot, save)
}

// coordinator is the test's end of an agent served in this process.
type coordinator struct {
	t      *testing.T
	in     *io.PipeWriter // the agent's stdin
	out    *json.Decoder  // the agent's stdout
	served chan error     // Serve's result
}

// serveAgent serves an agent running r, and reads its ready message.
func serveAgent(t *testing.T, newRunner func(a *Agent) itemtask.Runner) *coordinator {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	a := NewAgent(outW)
	c := &coordinator{t: t, in: inW, out: json.NewDecoder(outR), served: make(chan error, 1)}
	go func() { c.served <- a.Serve(context.Background(), inR, newRunner(a)) }()
	t.Cleanup(func() {
		inW.Close()
		outR.Close()
	})
	if m := c.read(); m.Type != typeReady || m.PID == 0 {
		t.Fatalf("first message %+v, want ready with a pid", m)
	}
	return c
}

func (c *coordinator) send(m frame) {
	c.t.Helper()
	line, _ := json.Marshal(m)
	if _, err := c.in.Write(append(line, '\n')); err != nil {
		c.t.Fatal(err)
	}
}

func (c *coordinator) read() frame {
	c.t.Helper()
	var m frame
	if err := c.out.Decode(&m); err != nil {
		c.t.Fatal(err)
	}
	return m
}

// expect reads a frame and checks its type (a msg's kind) and dispatch
// id.
func (c *coordinator) expect(typ, id string) frame {
	c.t.Helper()
	m := c.read()
	got, gotID := m.Type, m.DispatchID
	switch {
	case m.Msg != nil:
		got, gotID = m.Msg.Kind, m.Msg.DispatchID
	case m.Outcome != nil:
		gotID = m.Outcome.DispatchID
	}
	if got != typ || gotID != id {
		c.t.Fatalf("got %+v, want %s of %q", m, typ, id)
	}
	return m
}

func task(id string) itemtask.Task {
	return itemtask.Task{JobID: "j", ItemID: "i", Item: json.RawMessage(`"i"`), Attempt: 1, DispatchID: id}
}

// A checkpoint waits for its reply: a reply to another request does not
// end the wait, and the reply's error is what save returns.
func TestAgentCheckpointWaitsForItsAck(t *testing.T) {
	saved := make(chan error, 1)
	c := serveAgent(t, func(*Agent) itemtask.Runner {
		return runnerFunc(func(ctx context.Context, tk itemtask.Task, _ itemtask.Slot, save func(itemtask.StepRecord) error) (itemtask.Outcome, error) {
			err := save(itemtask.StepRecord{Index: 0, Key: "a", Status: "succeeded"})
			saved <- err
			return itemtask.Outcome{DispatchID: tk.DispatchID}, nil
		})
	})
	c.send(frame{Type: typeTask, Task: new(task("d1"))})
	m := c.expect(remote.KindCheckpoint, "d1")
	if m.Msg.Step == nil || m.Msg.Step.Key != "a" || m.ID == 0 {
		t.Fatalf("checkpoint %+v, want step a, a request", m)
	}
	c.send(frame{Type: typeReply, ID: m.ID + 1, Reply: &remote.Reply{}}) // another request's
	c.send(frame{Type: typeReply, ID: m.ID, Reply: &remote.Reply{Error: "disk full"}})
	if err := <-saved; err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Fatalf("save returned %v, want the ack's error", err)
	}
	c.expect(typeOutcome, "d1")
}

// The task's slot is given back and taken again over the protocol, and
// Acquire returns only when the coordinator grants the slot.
func TestAgentSlotOverTheProtocol(t *testing.T) {
	acquired := make(chan error, 1)
	c := serveAgent(t, func(*Agent) itemtask.Runner {
		return runnerFunc(func(ctx context.Context, tk itemtask.Task, slot itemtask.Slot, _ func(itemtask.StepRecord) error) (itemtask.Outcome, error) {
			slot.Release()
			acquired <- slot.Acquire(ctx)
			return itemtask.Outcome{DispatchID: tk.DispatchID}, nil
		})
	})
	c.send(frame{Type: typeTask, Task: new(task("d1"))})
	c.expect(remote.KindRelease, "d1")
	m := c.expect(remote.KindAcquire, "d1")
	c.send(frame{Type: typeReply, ID: m.ID, Reply: &remote.Reply{Error: "no slot"}})
	if err := <-acquired; err == nil || !strings.Contains(err.Error(), "no slot") {
		t.Fatalf("Acquire returned %v, want the grant's error", err)
	}
	c.expect(typeOutcome, "d1")
}

// Events name the task running; a task that ends without an outcome is
// abandoned with its error; the agent then takes the next task.
func TestAgentEventsAndAbandonedTask(t *testing.T) {
	c := serveAgent(t, func(a *Agent) itemtask.Runner {
		return runnerFunc(func(ctx context.Context, tk itemtask.Task, _ itemtask.Slot, _ func(itemtask.StepRecord) error) (itemtask.Outcome, error) {
			a.Emit(eventlog.StepStarted("a", 1, "true"))
			if tk.DispatchID == "d1" {
				return itemtask.Outcome{}, errors.New("item unreadable")
			}
			return itemtask.Outcome{DispatchID: tk.DispatchID, Output: "ok"}, nil
		})
	})
	c.send(frame{Type: typeTask, Task: new(task("d1"))})
	if m := c.expect(remote.KindEvent, "d1"); m.Msg.Event == nil || m.Msg.Event.Type != eventlog.TypeStepStarted || m.Msg.Event.Str("step") != "a" {
		t.Errorf("event %+v", m)
	}
	if m := c.expect(typeAbandoned, "d1"); m.Error != "item unreadable" {
		t.Errorf("abandoned %+v", m)
	}
	c.send(frame{Type: typeTask, Task: new(task("d2"))})
	c.expect(remote.KindEvent, "d2")
	if m := c.expect(typeOutcome, "d2"); m.Outcome == nil || m.Outcome.Output != "ok" {
		t.Errorf("outcome %+v", m)
	}
}

// When its input ends, the agent stops the task running and Serve returns
// nil.
func TestAgentStopsWhenInputEnds(t *testing.T) {
	started, stopped := make(chan struct{}), make(chan error, 1)
	c := serveAgent(t, func(*Agent) itemtask.Runner {
		return runnerFunc(func(ctx context.Context, tk itemtask.Task, _ itemtask.Slot, _ func(itemtask.StepRecord) error) (itemtask.Outcome, error) {
			close(started)
			<-ctx.Done()
			stopped <- context.Cause(ctx)
			return itemtask.Outcome{}, context.Cause(ctx)
		})
	})
	c.send(frame{Type: typeTask, Task: new(task("d1"))})
	<-started
	c.in.Close()
	if err := <-stopped; !errors.Is(err, errCoordinatorGone) {
		t.Errorf("the task stopped with %v", err)
	}
	c.expect(typeAbandoned, "d1")
	select {
	case err := <-c.served:
		if err != nil {
			t.Errorf("Serve = %v, want nil", err)
		}
	case <-time.After(testkit.Scale(time.Minute)): // a bound, not a timing
		t.Fatal("Serve did not return")
	}
}

// A message the agent cannot read ends Serve with an error.
func TestAgentRefusesGarbage(t *testing.T) {
	c := serveAgent(t, func(*Agent) itemtask.Runner { return nil })
	c.in.Write([]byte("{\"type\":\"launch\"}\n"))
	select {
	case err := <-c.served:
		if err == nil || !strings.Contains(err.Error(), `unknown message "launch"`) {
			t.Errorf("Serve = %v, want an unknown message error", err)
		}
	case <-time.After(testkit.Scale(time.Minute)):
		t.Fatal("Serve did not return")
	}
}
