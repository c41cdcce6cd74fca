package dispatchtest

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/runnerdev/runner/internal/attemptlog"
	"github.com/runnerdev/runner/internal/eventlog"
	"github.com/runnerdev/runner/internal/itemtask"
	"github.com/runnerdev/runner/internal/job"
	"github.com/runnerdev/runner/internal/state"
)

// Host is an itemtask.Host that records what a dispatcher tells it: the
// checkpoints of each dispatch, the events of each item, its slot's
// moves.
type Host struct {
	// Refuse is what Checkpoint answers (nil: the checkpoint is saved).
	Refuse error

	job     *job.Job
	onEvent func(eventlog.Event) // sees each event of a dispatch as it comes

	mu          sync.Mutex
	checkpoints map[string][]int    // step indexes, by dispatch id
	events      map[string][]string // event types, by item id
	slot        countingSlot
}

var _ itemtask.Host = (*Host)(nil)

func (h *Host) Checkpoint(id string, rec state.StepRecord) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.checkpoints == nil {
		h.checkpoints = map[string][]int{}
	}
	h.checkpoints[id] = append(h.checkpoints[id], rec.Index)
	return h.Refuse
}

func (h *Host) Emit(_ string, e eventlog.Event) error {
	h.record(e)
	return nil
}

// record records an event of an item, told by a dispatcher or written to
// the job's log.
func (h *Host) record(e eventlog.Event) {
	if e.ItemID == "" {
		return
	}
	h.mu.Lock()
	if h.events == nil {
		h.events = map[string][]string{}
	}
	h.events[e.ItemID] = append(h.events[e.ItemID], string(e.Type))
	on := h.onEvent
	h.mu.Unlock()
	if on != nil {
		on(e)
	}
}

func (h *Host) Slot(string) itemtask.Slot { return &h.slot }

func (h *Host) JobEvent(eventlog.Event) {}

// AppendLog writes to the item's log as the engine does.
func (h *Host) AppendLog(t itemtask.Task, origin itemtask.Origin, start time.Time, text string) {
	header := attemptlog.Header{Kind: attemptlog.Item, Name: t.ItemID, Attempt: t.Attempt, Run: t.Run, Worker: origin.Worker, Start: start}
	attemptlog.Append(h.job.State().ItemLogPath(t.ItemID), header, text)
}

func (h *Host) UpdateMeta(fn func(*state.Meta)) error { return h.job.UpdateMeta(fn) }

// notify makes on see each event of an item from now on.
func (h *Host) notify(on func(eventlog.Event)) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.onEvent = on
}

// checkpointed is the indexes of the steps dispatch id checkpointed, as
// "0,1".
func (h *Host) checkpointed(id string) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var s []string
	for _, i := range h.checkpoints[id] {
		s = append(s, strconv.Itoa(i))
	}
	return strings.Join(s, ",")
}

// eventTypes is the types of the events of item id, in order.
func (h *Host) eventTypes(id string) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return strings.Join(slices.Clone(h.events[id]), ",")
}

// countingSlot counts how a slot is used.
type countingSlot struct {
	mu                 sync.Mutex
	releases, acquires int
}

func (s *countingSlot) Release() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.releases++
}

func (s *countingSlot) Acquire(context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.acquires++
	return nil
}

func (s *countingSlot) counts() (releases, acquires int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.releases, s.acquires
}
