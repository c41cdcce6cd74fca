package mapreduce

import (
	"context"
	"hash/fnv"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/runnerdev/runner/errorpolicy"
	"github.com/runnerdev/runner/job"
	"github.com/runnerdev/runner/retryv2"
)

// scheduler starts items in up to max_parallel slots, behind the workflow
// circuit breaker, until the items run out, the error policy stops the job
// or ctx ends.
type scheduler struct {
	agent  Agent
	ledger *ledger
	slots  slots
	gate   *errorpolicy.Gate // nil without a workflow circuit breaker
	retry  *retryv2.Policy   // on_item_failure: retry; nil otherwise
	seed   uint64
	emit   func(typ string, fields map[string]any)
	ended  func(it *Item) // after an item's end is recorded; may be nil
	// resumed are the items an ended process left running, by index,
	// with their checkpoints: they go on from there.
	resumed map[int]job.ItemRecord

	wg sync.WaitGroup
	// gateMu orders the breaker's transitions (made in Pass.Done) with
	// the start of a new item: an item whose start is recorded was
	// admitted by the breaker's current state.
	gateMu   sync.Mutex
	mu       sync.Mutex
	stopped  *errorpolicy.Verdict // why the error policy stopped the job
	fatalErr error                // a state write failed: the job cannot go on safely
}

// dispatch is called with each pending item in order; it returns false
// once no more items may start.
func (s *scheduler) dispatch(ctx context.Context, it *Item) bool {
	if !s.running(ctx) {
		return false
	}
	sl := &slot{sem: s.slots}
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
		if sl.Acquire(ctx) != nil || !s.running(ctx) {
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
func (s *scheduler) runItem(ctx context.Context, it *Item, sl *slot, pass *errorpolicy.Pass, from job.ItemRecord) {
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
	for attempt := from.Attempt; ; attempt++ {
		cp := Checkpoints{Saved: saved, Save: func(rec job.StepRecord) error { return s.ledger.step(it, attempt, rec) }}
		saved = nil
		out := s.agent.RunItem(ctx, it, attempt, sl, cp)
		if ctx.Err() != nil {
			return // interrupted: the item stays pending
		}
		if out.Err != nil {
			s.fail(out.Err)
			return
		}
		if out.Failed {
			out.Failure = s.ledger.mask(out.Failure)
		}
		var (
			verdict *errorpolicy.Verdict
			err     error
		)
		switch {
		case !out.Failed:
			verdict, err = s.ledger.succeeded(it, attempt, out)
		case s.retry != nil && attempt < s.retry.Attempts:
			failures = append(failures, out.Failure)
			delay := s.retry.Delay(attempt, s.jitter(it))
			if err := s.ledger.retrying(it, failures, delay); err != nil {
				s.fail(err)
				return
			}
			if retryv2.Pause(ctx, delay, sl) != nil {
				return
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
		}
		if verdict != nil {
			s.stop(verdict)
		}
		return
	}
}

// jitter is the random source of an item's item-level retry delays,
// derived from the job's seed and the item so that a seed reproduces them.
func (s *scheduler) jitter(it *Item) func() float64 {
	h := fnv.New64a()
	h.Write([]byte("item-retry\x00" + it.ID))
	return rand.New(rand.NewPCG(s.seed, h.Sum64())).Float64
}

// stop records the first verdict that stops the job.
func (s *scheduler) stop(v *errorpolicy.Verdict) {
	s.mu.Lock()
	first := s.stopped == nil
	if first {
		s.stopped = v
	}
	s.mu.Unlock()
	if first {
		s.emit("threshold_reached", map[string]any{"rule": v.Rule, "reason": v.Reason})
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
