package mapreduce

import (
	"context"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/runnerdev/runner/errorpolicy"
	"github.com/runnerdev/runner/internal/attemptlog"
	"github.com/runnerdev/runner/internal/crashpoint"
	"github.com/runnerdev/runner/internal/eventlog"
	"github.com/runnerdev/runner/internal/itemtask"
	"github.com/runnerdev/runner/internal/state"
	"github.com/runnerdev/runner/internal/workspace"
	"github.com/runnerdev/runner/retryv2"
)

// scheduler starts items in up to max_parallel slots, behind the workflow
// circuit breaker, until the items run out, the error policy or the
// budget stops the job or ctx ends.
type scheduler struct {
	dispatcher itemtask.Dispatcher
	ledger     *ledger
	slots      itemtask.Slots
	gate       *errorpolicy.Gate // nil without a workflow circuit breaker
	retry      *retryv2.Policy   // on_item_failure: retry; nil otherwise
	budget     errorpolicy.Budget
	spent      func() eventlog.AgentUsage // what the job's agents spent, all its runs, running ones as last reported (job.Spent)
	// stopItems ends the items' context when the budget stops the job
	// (--hard); nil: the items running finish.
	stopItems  context.CancelCauseFunc
	trees      *workspace.Worktrees // map.isolation: worktree; nil otherwise
	jobID      string
	seed       uint64
	runKind    string                        // RunFirst, RunResume or RunDLQRetry: what the tasks' log headers say
	emit       func(...eventlog.Event)       // events produced together, in one write
	logPath    func(itemID string) string    // of the items' output logs
	updateMeta func(func(*state.Meta)) error // the job's, under its lock
	ended      func(it *Item)                // after an item's end is recorded; may be nil
	// resumed are the items an ended process left running, by index,
	// with their checkpoints: they go on from there.
	resumed map[int]state.ItemRecord
	total   int // the job's items, for ${item_total}; 0: not known
	// last reports whether a checkpoint is the template's last step's,
	// written only when its task ends without an outcome (see
	// Checkpoint); nil: every checkpoint is written at once.
	last func(state.StepRecord) bool

	wg sync.WaitGroup
	// gateMu orders the breaker's transitions (made in Pass.Done) with
	// the start of a new item: an item whose start is recorded was
	// admitted by the breaker's current state.
	gateMu   sync.Mutex
	mu       sync.Mutex
	stopped  *errorpolicy.Verdict // why the error policy or the budget stopped the job
	fatalErr error                // a state write failed: the job cannot go on safely
	active   map[string]*dispatch // by dispatch id: the tasks out now
}

// dispatch is a task that is out: its item, attempt and slot, and the
// checkpoints of its attempt so far (for sending it again if its runner
// is lost).
type dispatch struct {
	it      *Item
	attempt int
	slot    *itemtask.Hold
	steps   []state.StepRecord
	last    *state.StepRecord // the last step's checkpoint, not written yet
}

// dispatch is called with each pending item in order; it returns false
// once no more items may start.
func (s *scheduler) dispatch(ctx context.Context, it *Item) bool {
	if !s.running(ctx) {
		return false
	}
	sl := s.slots.Hold()
	from, resumed := s.resumed[it.Index]
	from.Attempt = max(from.Attempt, 1)
	for {
		var pass *errorpolicy.Pass
		if s.gate != nil {
			var err error
			if pass, err = s.gate.Admit(ctx); err != nil {
				return false
			}
		}
		if sl.Acquire(ctx) != nil || !s.running(ctx) || !s.withinBudget() {
			sl.Release()
			if pass != nil {
				pass.Return() // not run: says nothing about the items' health
			}
			return false
		}
		s.gateMu.Lock()
		if pass != nil && pass.Stale() {
			// The breaker changed while this item waited for a slot.
			s.gateMu.Unlock()
			sl.Release()
			pass.Return()
			continue
		}
		var err error
		if resumed {
			s.ledger.started(it, from.Attempt, true)
		} else {
			err = s.ledger.start(it)
		}
		s.gateMu.Unlock()
		if err != nil {
			s.fail(err)
			sl.Release()
			if pass != nil {
				pass.Return()
			}
			return false
		}
		s.wg.Add(1)
		go s.runItem(ctx, it, sl, pass, from)
		return true
	}
}

// wait blocks until every started item has finished.
func (s *scheduler) wait() { s.wg.Wait() }

// close closes the dispatcher.
func (s *scheduler) close() error { return s.dispatcher.Close() }

// running reports whether new items may start.
func (s *scheduler) running(ctx context.Context) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return ctx.Err() == nil && s.stopped == nil && s.fatalErr == nil
}

// runItem runs one item (whose start dispatch recorded) to its end:
// attempts per the item-level retry policy, from where from (the item's
// running record, if an ended process left one) says, then the ledger
// records how it ended.
func (s *scheduler) runItem(ctx context.Context, it *Item, sl *itemtask.Hold, pass *errorpolicy.Pass, from state.ItemRecord) {
	defer s.wg.Done()
	defer sl.Release()
	if s.ended != nil {
		defer s.ended(it)
	}
	if pass != nil {
		defer pass.Return() // interrupted: the item says nothing about health (no-op after Done)
	}
	if wait := time.Until(from.Due); wait > 0 && retryv2.Pause(ctx, wait, sl) != nil {
		return // interrupted in the item-level retry delay it was resumed in
	}
	failures, err := earlierFailures(from)
	if err != nil {
		s.fail(err)
		return
	}
	saved := from.Steps
	spent := from.Spent // what the item's attempts' agents spent, earlier runs' included
	for attempt := from.Attempt; ; attempt++ {
		out, ok := s.run(ctx, it, attempt, sl, saved)
		if !ok {
			return // interrupted, or a checkpoint could not be saved: the item stays pending
		}
		saved = nil
		spent = eventlog.AddUsage(spent, out.Usage)
		out.Usage = spent
		out = s.overItemLimit(out, attempt, spent)
		if s.trees != nil {
			crashpoint.Hit(crashpoint.ItemWorktreeRemoved)
			if out, err = s.trees.Merge(ctx, it, attempt, out); err != nil {
				s.fail(err)
				return
			}
		}
		if out.Failed {
			out.Failure = s.ledger.mask(out.Failure)
		}
		var verdict *errorpolicy.Verdict
		switch {
		case !out.Failed:
			verdict, err = s.ledger.succeeded(it, attempt, out)
		case s.retry != nil && attempt < s.retry.Attempts && out.Failure.Kind != KindBudget:
			failures = append(failures, out.Failure)
			delay := s.retry.Delay(attempt, s.jitter(it))
			if err := s.ledger.retrying(it, failures, spent, delay); err != nil {
				s.fail(err)
				return
			}
			s.dispatcher.Recorded(ctx, out.DispatchID)
			if !s.withinBudget() || retryv2.Pause(ctx, delay, sl) != nil {
				return // it goes on with its next attempt when the job is resumed
			}
			s.ledger.started(it, attempt+1, false)
			continue
		default:
			verdict, err = s.ledger.failed(it, append(failures, out.Failure), out)
		}
		if pass != nil {
			s.gateMu.Lock()
			pass.Done(out.Failed)
			s.gateMu.Unlock()
		}
		if err != nil {
			s.fail(err)
		} else {
			s.dispatcher.Recorded(ctx, out.DispatchID)
			if s.trees != nil {
				s.trees.Recorded(ctx, out)
			}
		}
		if verdict != nil {
			s.stop(verdict)
		}
		return
	}
}

// recordMerged records the success of a resumed item that the process
// which died while it ran had merged into the job branch.
func (s *scheduler) recordMerged(ctx context.Context, it *Item, attempt int, out itemtask.Outcome) {
	verdict, err := s.ledger.succeeded(it, max(attempt, 1), out)
	if err != nil {
		s.fail(err)
		return
	}
	s.trees.Recorded(ctx, out)
	if verdict != nil {
		s.stop(verdict)
	}
}

// lostPause is how long an item whose runner was lost waits (times the
// losses so far) before it is sent again.
const lostPause = 100 * time.Millisecond

// run runs one attempt of an item to its outcome: when its runner is lost
// (the dispatch ends without an outcome) the attempt goes out again after
// the steps it saved, until maxLost runners were lost, which fails it as
// kind lost. It reports false, and no outcome, when ctx ended or a
// checkpoint could not be saved.
func (s *scheduler) run(ctx context.Context, it *Item, attempt int, sl *itemtask.Hold, saved []state.StepRecord) (itemtask.Outcome, bool) {
	for lost := 1; ; lost++ {
		out, steps, err := s.send(ctx, it, attempt, sl, saved)
		switch {
		case ctx.Err() != nil || s.failed():
			return itemtask.Outcome{}, false
		case err == nil:
			return out, true
		case lost == maxLost:
			return itemtask.Outcome{Failed: true, Failure: itemtask.Failure{Attempt: attempt, At: time.Now(), Kind: itemtask.KindLost, ExitCode: -1,
				Message: fmt.Sprintf("its runner was lost %d times, the last: %v", lost, err)}}, true
		}
		saved = steps
		s.ledger.started(it, attempt, true)
		if retryv2.Pause(ctx, time.Duration(lost)*lostPause, sl) != nil {
			return itemtask.Outcome{}, false
		}
	}
}

// send dispatches one attempt of an item, after the checkpoints saved,
// and returns its outcome. When the dispatch ends without an outcome (or
// with another dispatch's) it returns an error and the checkpoints of the
// attempt so far.
func (s *scheduler) send(ctx context.Context, it *Item, attempt int, sl *itemtask.Hold, saved []state.StepRecord) (itemtask.Outcome, []state.StepRecord, error) {
	t := itemtask.Task{JobID: s.jobID, Index: it.Index, ItemID: it.ID, Item: it.Raw, Attempt: attempt, DispatchID: newDispatchID(it, attempt), Seed: s.seed, Total: s.total, Run: s.runKind, Checkpoints: saved, Value: it.Value}
	d := &dispatch{it: it, attempt: attempt, slot: sl, steps: slices.Clone(saved)}
	s.mu.Lock()
	s.active[t.DispatchID] = d
	s.mu.Unlock()
	out, err := s.dispatcher.Dispatch(ctx, t)
	s.mu.Lock()
	delete(s.active, t.DispatchID)
	steps, last := d.steps, d.last
	s.mu.Unlock()
	if err != nil && last != nil {
		// No outcome: the item stays running, and goes on after its steps.
		if serr := s.ledger.step(it, attempt, *last); serr != nil {
			s.fail(serr)
		}
	}
	if err == nil && out.DispatchID != t.DispatchID {
		err = fmt.Errorf("%w: the outcome of dispatch %q came back for %q", itemtask.ErrStale, out.DispatchID, t.DispatchID)
	}
	return out, steps, err
}

// current returns the dispatch of id if it is out.
func (s *scheduler) current(id string) (*dispatch, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if d, ok := s.active[id]; ok {
		return d, nil
	}
	return nil, fmt.Errorf("%w: %q", itemtask.ErrStale, id)
}

// Checkpoint saves a step of a dispatched attempt (Host). The last
// template step's, when it finished, is only kept until the task ends:
// its outcome follows at once, and the item's end record makes it
// needless; a task that ends without one writes it then. A crash in
// between runs the step again, as a crash during the step would.
func (s *scheduler) Checkpoint(id string, rec state.StepRecord) error {
	d, err := s.current(id)
	if err != nil {
		return err
	}
	deferred := s.last != nil && s.last(rec)
	if !deferred {
		if err := s.ledger.step(d.it, d.attempt, rec); err != nil {
			s.fail(err)
			return err
		}
	}
	s.mu.Lock()
	d.steps = append(d.steps, rec)
	if deferred {
		d.last = &rec
	}
	s.mu.Unlock()
	return nil
}

// Emit records an event of a dispatched task's run (Host).
func (s *scheduler) Emit(id string, e eventlog.Event) error {
	d, err := s.current(id)
	if err != nil {
		return err
	}
	if e.ItemID != "" {
		e = e.WithItem(d.it.ID) // the item is the dispatch's, whatever the runner said
	}
	s.emit(e)
	return nil
}

// Slot is a dispatched task's hold on a place to run (Host).
func (s *scheduler) Slot(id string) itemtask.Slot {
	d, err := s.current(id)
	if err != nil {
		return nil
	}
	return d.slot
}

// JobEvent records an event of the job that no dispatch owns (Host).
func (s *scheduler) JobEvent(e eventlog.Event) { s.emit(e) }

// AppendLog adds the output of t's attempt that origin ran to the item's
// log, after the attempt's header (Host).
func (s *scheduler) AppendLog(t itemtask.Task, origin itemtask.Origin, start time.Time, text string) {
	h := attemptlog.Header{Kind: attemptlog.Item, Name: t.ItemID, Attempt: t.Attempt, Run: t.Run, Worker: origin.Worker, Start: start}
	attemptlog.Append(s.logPath(t.ItemID), h, text)
}

// UpdateMeta changes the job's metadata under its lock (Host).
func (s *scheduler) UpdateMeta(fn func(*state.Meta)) error { return s.updateMeta(fn) }

// failed reports whether a state write failed.
func (s *scheduler) failed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.fatalErr != nil
}

// jitter is the random source of an item's item-level retry delays,
// derived from the job's seed and the item so that a seed reproduces them.
func (s *scheduler) jitter(it *Item) func() float64 {
	h := fnv.New64a()
	h.Write([]byte("item-retry\x00" + it.ID))
	return rand.New(rand.NewPCG(s.seed, h.Sum64())).Float64
}

// stop records the first verdict that stops the job, when the error
// policy gives it.
func (s *scheduler) stop(v *errorpolicy.Verdict) {
	s.halt(v, eventlog.ThresholdReached(v.Rule, v.Reason))
}

// halt records the first verdict that stops the job, with its event.
func (s *scheduler) halt(v *errorpolicy.Verdict, e eventlog.Event) {
	s.mu.Lock()
	first := s.stopped == nil
	if first {
		s.stopped = v
	}
	s.mu.Unlock()
	if first {
		s.emit(e)
	}
}

// fail records a state write that failed; no new item starts.
func (s *scheduler) fail(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fatalErr == nil {
		s.fatalErr = err
	}
}
