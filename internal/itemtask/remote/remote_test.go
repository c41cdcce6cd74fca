package remote

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/runnerdev/runner/internal/eventlog"
	"github.com/runnerdev/runner/internal/itemtask"
	"github.com/runnerdev/runner/internal/state"
	"github.com/runnerdev/runner/internal/testkit"
)

// loopback is a Transport straight into a Tracker, recording what it
// carries.
type loopback struct {
	tr   *Tracker
	mu   sync.Mutex
	sent []Msg
}

func (l *loopback) Publish(m Msg) {
	l.mu.Lock()
	l.sent = append(l.sent, m)
	l.mu.Unlock()
	l.tr.Receive(m, nil)
}

func (l *loopback) Request(ctx context.Context, m Msg) (Reply, error) {
	l.mu.Lock()
	l.sent = append(l.sent, m)
	l.mu.Unlock()
	answer := make(chan Reply, 1)
	l.tr.Receive(m, func(r Reply) { answer <- r })
	select {
	case r := <-answer:
		return r, nil
	case <-ctx.Done():
		return Reply{}, context.Cause(ctx)
	}
}

func (l *loopback) kinds() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, m := range l.sent {
		out = append(out, m.Kind)
	}
	return out
}

// host is a Host that logs the calls it gets, as "call dispatch what".
type host struct {
	mu     sync.Mutex
	calls  []string
	refuse error // what Checkpoint returns
}

func (h *host) log(call string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.calls = append(h.calls, call)
}

func (h *host) Checkpoint(id string, rec itemtask.StepRecord) error {
	h.log("checkpoint " + id + " " + rec.Key)
	return h.refuse
}

func (h *host) Emit(id string, e eventlog.Event) error {
	h.log("emit " + id + " " + string(e.Type) + " " + e.Str("run_id"))
	return nil
}

func (h *host) Slot(string) itemtask.Slot { return h }
func (h *host) Release()                  { h.log("release") }
func (h *host) Acquire(context.Context) error {
	h.log("acquire")
	return nil
}

func (h *host) JobEvent(eventlog.Event)                                     {}
func (h *host) AppendLog(itemtask.Task, itemtask.Origin, time.Time, string) {}
func (h *host) UpdateMeta(func(*state.Meta)) error                          { return nil }

// logged is what h was told, its calls named by prefix only.
func (h *host) logged(prefix string) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for _, c := range h.calls {
		if strings.HasPrefix(c, prefix) {
			out = append(out, c)
		}
	}
	return strings.Join(out, ",")
}

// A run's checkpoint, events, delay and output reach the host through
// the codec, in order; a refused checkpoint stops the run and aborts its
// dispatch.
func TestReporterToTracker(t *testing.T) {
	h := &host{}
	var out bytes.Buffer
	tr := NewTracker(h, &itemtask.Live{Stdout: &out, Stderr: &out})
	task := itemtask.Task{Index: 3, Attempt: 1, DispatchID: "d"}
	p := tr.Track(t.Context(), task, nil)
	lb := &loopback{tr: tr}
	rp := NewReporter(lb, Run{DispatchID: "d", Index: 3, Attempt: 1}, 0)
	rp.Emit(eventlog.Event{Type: eventlog.TypeStepStarted})
	if err := rp.Save(t.Context(), itemtask.StepRecord{Key: "a"}); err != nil {
		t.Fatal(err)
	}
	rp.Release()
	if err := rp.Acquire(t.Context()); err != nil {
		t.Fatal(err)
	}
	Output(lb, strings.ToUpper).Stdout.Write([]byte("3\tline\n"))
	h.refuse = errors.New("disk full")
	var ref *Refusal
	if err := rp.Save(t.Context(), itemtask.StepRecord{Key: "b"}); !errors.As(err, &ref) || !ref.Term || ref.Reason != "disk full" {
		t.Errorf("refused Save = %v, want a Refusal that drops the task", err)
	}
	select {
	case err := <-p.Aborted():
		if err != h.refuse {
			t.Errorf("abort %v", err)
		}
	default:
		t.Error("the dispatch did not hear that its checkpoint was refused")
	}
	tr.Untrack(p)
	if got := h.logged(""); got != "emit d step_started ,checkpoint d a,release,acquire,checkpoint d b" {
		t.Errorf("the host was told %q", got)
	}
	if out.String() != "3\tLINE\n" {
		t.Errorf("output shown %q, want the masked line", out.String())
	}
	if got := lb.kinds(); !slices.Equal(got, []string{"event", "checkpoint", "release", "acquire", "output", "checkpoint"}) {
		t.Errorf("messages %v", got)
	}
}

// What comes from a run no dispatch of its item waits for is refused: an
// older attempt's or another dispatch's run is told to drop its task, an
// older delivery to stop, a newer attempt is unknown; after an interrupt
// an unknown run is stopped. A NATS worker's events name their worker and
// run, and one after a gap waits for the result.
func TestTrackerRefusesOtherRuns(t *testing.T) {
	h := &host{}
	tr := NewTracker(h, nil)
	p := tr.Track(t.Context(), itemtask.Task{Index: 1, Attempt: 2, DispatchID: "d"}, nil)
	ask := func(r Run) Reply {
		var got Reply
		tr.Receive(Msg{Kind: KindCheckpoint, Run: r, Step: &itemtask.StepRecord{Key: "k"}}, func(r Reply) { got = r })
		return got
	}
	if r := ask(Run{Index: 1, Attempt: 2, Epoch: 1, Delivery: 2, Worker: "w"}); r.Error != "" {
		t.Fatalf("the current run refused: %+v", r)
	}
	for name, c := range map[string]struct {
		run  Run
		want Reply
	}{
		"older attempt":    {Run{Index: 1, Attempt: 1, Epoch: 1, Delivery: 3}, Reply{Term: true}},
		"other dispatch":   {Run{Index: 1, Attempt: 2, DispatchID: "other"}, Reply{Term: true}},
		"older delivery":   {Run{Index: 1, Attempt: 2, Epoch: 1, Delivery: 1}, Reply{}},
		"newer attempt":    {Run{Index: 1, Attempt: 3, Epoch: 1, Delivery: 1}, Reply{Unknown: true}},
		"item not tracked": {Run{Index: 2, Attempt: 1}, Reply{Unknown: true}},
	} {
		r := ask(c.run)
		if r.Unknown != c.want.Unknown || r.Term != c.want.Term || (r.Error == "") != c.want.Unknown {
			t.Errorf("%s: answered %+v", name, r)
		}
	}
	run := Run{Index: 1, Attempt: 2, Epoch: 1, Delivery: 2, Worker: "w"}
	for _, seq := range []int{1, 3, 2} {
		tr.Receive(Msg{Kind: KindEvent, Run: run, Seq: seq, Event: &eventlog.Event{Type: eventlog.TypeStepStarted}}, nil)
	}
	if got := h.logged("emit"); got != "emit d step_started 1.0.2,emit d step_started 1.0.2" {
		t.Errorf("events %q, want the first and second, told of their run", got)
	}
	tr.Interrupt()
	tr.Untrack(p)
	if r := ask(Run{Index: 1, Attempt: 2}); r.Error == "" || r.Term {
		t.Errorf("after the interrupt answered %+v, want the run stopped, its task kept", r)
	}
	if got := h.logged("checkpoint"); got != "checkpoint d k" {
		t.Errorf("checkpoints saved %q, want the current run's only", got)
	}
}

// events are the numbers of the events l carried.
func (l *loopback) events() []int {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []int
	for _, m := range l.sent {
		if m.Kind == KindEvent {
			out = append(out, m.Seq)
		}
	}
	return out
}

// A run's events are sent once its hold is over, numbered in order, and
// those after at once; a run that ends within its hold sends none of it,
// even when the hold would have ended later.
func TestReporterHoldsEventsBack(t *testing.T) {
	short, long := &loopback{tr: NewTracker(&host{}, nil)}, &loopback{tr: NewTracker(&host{}, nil)}
	rp := NewReporter(short, Run{}, time.Hour)
	rp.Emit(eventlog.Event{Type: eventlog.TypeStepStarted})
	rp.Drop()
	rp.Flush() // the hold's end, come late
	rp.Emit(eventlog.Event{Type: eventlog.TypeStepCompleted})
	if got := short.events(); len(got) != 0 {
		t.Errorf("a run ended in its hold sent %v, want nothing", got)
	}
	rp = NewReporter(long, Run{}, time.Hour)
	rp.Emit(eventlog.Event{Type: eventlog.TypeStepStarted})
	rp.Emit(eventlog.Event{Type: eventlog.TypeStepCompleted})
	if got := long.events(); len(got) != 0 {
		t.Fatalf("sent during the hold: %v", got)
	}
	if err := rp.Save(t.Context(), itemtask.StepRecord{}); err != nil { // ends the hold
		t.Fatal(err)
	}
	rp.Emit(eventlog.Event{Type: eventlog.TypeStepStarted})
	if got := long.events(); !slices.Equal(got, []int{1, 2, 3}) {
		t.Errorf("events sent numbered %v, want [1 2 3]", got)
	}
}

// The hold ends by itself.
func TestHoldEndsByItself(t *testing.T) {
	r := &loopback{tr: NewTracker(&host{}, nil)}
	rp := NewReporter(r, Run{}, time.Millisecond)
	rp.Emit(eventlog.Event{Type: eventlog.TypeStepStarted})
	if !testkit.Poll(func() bool { return len(r.events()) > 0 }) {
		t.Error("the event held back was never sent")
	}
}

// slowHost is a host whose Emit waits until emitted is closed.
type slowHost struct {
	host
	started, emitted chan struct{}
}

func (h *slowHost) Emit(id string, e eventlog.Event) error {
	close(h.started)
	<-h.emitted
	return h.host.Emit(id, e)
}

// A result's events wait for a live event counted as recorded to reach
// the host: the dispatch ends after the result, and a host refuses what
// comes for a dispatch that is over.
func TestUnemittedWaitsForLiveEvents(t *testing.T) {
	h := &slowHost{started: make(chan struct{}), emitted: make(chan struct{})}
	tr := NewTracker(h, nil)
	p := tr.Track(t.Context(), itemtask.Task{Index: 1, Attempt: 1, DispatchID: "d"}, nil)
	run := Run{Index: 1, Attempt: 1, Epoch: 1, Delivery: 1, Worker: "w"}
	go tr.Receive(Msg{Kind: KindEvent, Run: run, Seq: 1, Event: &eventlog.Event{Type: eventlog.TypeAgentUsage}}, nil)
	<-h.started
	done := make(chan []eventlog.Event)
	go func() {
		events, _ := tr.Unemitted(1, 1, run.ID(), []eventlog.Event{{Type: eventlog.TypeAgentUsage}, {Type: eventlog.TypeStepCompleted}}, nil)
		done <- events
	}()
	select {
	case <-done:
		t.Fatal("Unemitted returned while a live event was on its way to the host")
	case <-time.After(testkit.Scale(50 * time.Millisecond)):
	}
	close(h.emitted)
	if events := <-done; len(events) != 1 || events[0].Type != eventlog.TypeStepCompleted {
		t.Errorf("unemitted %v, want the step_completed after the live event", events)
	}
	tr.Untrack(p)
	if got := h.logged("emit"); got != "emit d agent_usage 1.0.1" {
		t.Errorf("host told %q", got)
	}
}
