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

// host is a Host that records what it is told.
type host struct {
	mu          sync.Mutex
	events      []string // "id type"
	checkpoints []string // "id step"
	refuse      error    // what Checkpoint returns
	releases    int
	acquires    int
}

func (h *host) Checkpoint(id string, rec itemtask.StepRecord) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.checkpoints = append(h.checkpoints, id+" "+rec.Key)
	return h.refuse
}

func (h *host) Emit(id string, e eventlog.Event) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.events = append(h.events, id+" "+string(e.Type)+" "+e.Str("run_id"))
	return nil
}

func (h *host) Slot(string) itemtask.Slot { return h }
func (h *host) Release()                  { h.mu.Lock(); h.releases++; h.mu.Unlock() }
func (h *host) Acquire(context.Context) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.acquires++
	return nil
}

func (h *host) JobEvent(eventlog.Event)                                     {}
func (h *host) AppendLog(itemtask.Task, itemtask.Origin, time.Time, string) {}
func (h *host) UpdateMeta(func(*state.Meta)) error                          { return nil }

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
	if got := strings.Join(h.events, ","); got != "d step_started " {
		t.Errorf("events %q", got)
	}
	if got := strings.Join(h.checkpoints, ","); got != "d a,d b" {
		t.Errorf("checkpoints %q", got)
	}
	if h.releases != 1 || h.acquires != 1 {
		t.Errorf("slot released %d and acquired %d times, want 1 and 1", h.releases, h.acquires)
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
	if got := strings.Join(h.events, ","); got != "d step_started 1.0.2,d step_started 1.0.2" {
		t.Errorf("events %q, want the first and second, told of their run", got)
	}
	tr.Interrupt()
	tr.Untrack(p)
	if r := ask(Run{Index: 1, Attempt: 2}); r.Error == "" || r.Term {
		t.Errorf("after the interrupt answered %+v, want the run stopped, its task kept", r)
	}
	if got := len(h.checkpoints); got != 1 {
		t.Errorf("%d checkpoints saved, want the current run's only", got)
	}
}

// A run's events are sent once its hold is over, numbered in order, and
// not at all when it ends within it.
func TestReporterHoldsEventsBack(t *testing.T) {
	lb := &loopback{tr: NewTracker(&host{}, nil)}
	short := NewReporter(lb, Run{}, time.Hour)
	short.Emit(eventlog.Event{Type: eventlog.TypeStepStarted})
	short.Drop()
	long := NewReporter(lb, Run{}, time.Hour)
	long.Emit(eventlog.Event{Type: eventlog.TypeStepStarted})
	long.Emit(eventlog.Event{Type: eventlog.TypeStepCompleted})
	if len(lb.kinds()) != 0 {
		t.Fatalf("sent during the hold: %v", lb.kinds())
	}
	long.Flush()
	var seqs []int
	for _, m := range lb.sent {
		seqs = append(seqs, m.Seq)
	}
	if !slices.Equal(seqs, []int{1, 2}) {
		t.Errorf("events sent numbered %v, want [1 2] (the long run's only)", seqs)
	}
}
