package mapreduce

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/runnerdev/runner/errorpolicy"
	"github.com/runnerdev/runner/internal/crashpoint"
	"github.com/runnerdev/runner/internal/eventlog"
	"github.com/runnerdev/runner/internal/items"
	"github.com/runnerdev/runner/internal/itemtask"
	"github.com/runnerdev/runner/internal/job"
	"github.com/runnerdev/runner/internal/state"
	"github.com/runnerdev/runner/internal/workspace"
)

// ledger makes every item state transition, in one place and in an order
// that survives a crash at any point: the DLQ before the item log for a
// failure, the result before the item log for any end. At every moment each
// item is exactly one of succeeded, in the DLQ, skipped or pending (no
// record, or "running" without a DLQ entry: see reconcile).
type ledger struct {
	job     *job.Job
	items   *itemLog
	dlq     DeadLetters
	results *resultLog // nil: results are not kept (dlq retry)
	action  errorpolicy.Action
	tracker *errorpolicy.Tracker // nil: never stops (dlq retry)
	fromDLQ bool                 // dlq retry: items leave the DLQ on success

	mu     sync.Mutex
	counts state.ItemCounts
}

// start records that an item begins its first attempt.
func (l *ledger) start(it *Item) error {
	if err := l.items.Append(state.ItemRecord{Index: it.Index, ID: it.ID, State: state.ItemRunning, Attempt: 1}); err != nil {
		return err
	}
	crashpoint.Hit(crashpoint.ItemStarted)
	l.started(it, 1, false)
	return nil
}

// started tells that an attempt already recorded as running begins, or
// (resumed) goes on from its checkpoints after a crash.
func (l *ledger) started(it *Item, attempt int, resumed bool) {
	l.job.Emit(eventlog.ItemStarted(it.ID, it.Index, attempt, resumed))
}

// step checkpoints a template step of an item's attempt.
func (l *ledger) step(it *Item, attempt int, rec state.StepRecord) error {
	return l.items.Append(state.ItemRecord{Index: it.Index, ID: it.ID, Attempt: attempt, Step: &rec})
}

// succeeded records an item that finished without failure.
func (l *ledger) succeeded(it *Item, attempt int, out itemtask.Outcome) (*errorpolicy.Verdict, error) {
	if err := l.result(it, out, nil, false); err != nil {
		return nil, err
	}
	if err := l.items.Append(state.ItemRecord{Index: it.Index, ID: it.ID, State: state.ItemSucceeded, Attempt: attempt, DurationMS: out.Duration.Milliseconds()}); err != nil {
		return nil, err
	}
	crashpoint.Hit(crashpoint.ItemLogged)
	var events []eventlog.Event
	if l.fromDLQ {
		if err := l.dlq.Remove(it.ID); err != nil {
			return nil, err
		}
		crashpoint.Hit(crashpoint.DLQRemoved)
		events = append(events, eventlog.DLQRemoved(it.ID, ""))
	}
	l.job.Emit(append(events, eventlog.ItemSucceeded(it.ID, attempt, out.Duration).WithOutput(out.Output, "").WithWorker(out.Origin.Worker, out.Origin.Delivery).WithMerge(mergeOf(out)).WithUsage(out.Usage))...)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.counts.Succeeded++
	if l.fromDLQ {
		l.counts.DLQ--
	}
	return l.record(false), nil
}

// retrying records a failed attempt that the item-level retry runs again
// after delay: the next attempt is recorded as running from the end of the
// delay on, with the failures and what the agents spent so far, so that a
// crash meanwhile neither continues the failed attempt nor starts the
// item's attempts, or its spend, over.
func (l *ledger) retrying(it *Item, failures []itemtask.Failure, spent *eventlog.AgentUsage, delay time.Duration) error {
	f := failures[len(failures)-1]
	history, err := json.Marshal(failures) // masked as they joined
	if err != nil {
		return fmt.Errorf("item %s: %w", it.ID, err)
	}
	rec := state.ItemRecord{Index: it.Index, ID: it.ID, State: state.ItemRunning, Attempt: f.Attempt + 1, Due: time.Now().Add(delay), Failures: history, Spent: spent}
	if err := l.items.Append(rec); err != nil {
		return err
	}
	l.job.Emit(eventlog.ItemRetrying(it.ID, f.Event(), delay))
	return nil
}

// failed records an item's final failure per the error policy: to the DLQ
// (dlq, retry, stop) or skipped (skip). It returns the verdict of the
// error policy, if the job must stop.
func (l *ledger) failed(it *Item, failures []itemtask.Failure, out itemtask.Outcome) (*errorpolicy.Verdict, error) {
	last := failures[len(failures)-1]
	action := l.action
	if action == errorpolicy.Retry {
		action = errorpolicy.DLQ // retries are used up
	}
	st := state.ItemDLQ
	if l.fromDLQ {
		failures = slices.Clone(failures)
		for i := range failures {
			failures[i].Attempt = 0 // the DLQ numbers a retried item's failures after its history
		}
	}
	if action == errorpolicy.Skip {
		st = state.ItemSkipped
	} else if err := l.dlq.Add(DeadLetter{ItemID: it.ID, ItemIndex: it.Index, Item: it.Raw, Failures: failures}); err != nil {
		return nil, fmt.Errorf("item %s: %w", it.ID, err)
	} else {
		crashpoint.Hit(crashpoint.DLQAdded)
	}
	if err := l.result(it, out, &last, action == errorpolicy.Skip); err != nil {
		return nil, err
	}
	if err := l.items.Append(state.ItemRecord{Index: it.Index, ID: it.ID, State: st, Attempt: last.Attempt, DurationMS: out.Duration.Milliseconds(), Error: last.Message}); err != nil {
		return nil, err
	}
	crashpoint.Hit(crashpoint.ItemLogged)
	// The item is in the event so that a failure summary can group by
	// signature as the DLQ does.
	events := []eventlog.Event{eventlog.ItemFailed(it.ID, last.Event(), string(action), it.Value).WithOutput(out.Output, "").WithWorker(out.Origin.Worker, out.Origin.Delivery).WithMerge(mergeOf(out)).WithUsage(out.Usage)}
	if action == errorpolicy.Skip {
		events = append(events, eventlog.ItemSkipped(it.ID, "on_item_failure: skip"))
	} else if !l.fromDLQ {
		events = append(events, eventlog.DLQAdded(it.ID, len(failures)))
	}
	l.job.Emit(events...)
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case action == errorpolicy.Skip:
		l.counts.Skipped++
	case l.fromDLQ: // failed again: it stays in the DLQ
		l.counts.Failed++
	default:
		l.counts.Failed++
		l.counts.DLQ++
	}
	return l.record(true), nil
}

// mask returns f without the job's secrets. A failure is masked once, as
// it joins its item's history: everything the ledger writes of it (the
// DLQ, the item log, events) then holds no secret.
func (l *ledger) mask(f itemtask.Failure) itemtask.Failure {
	f.Message = l.job.Secrets().Mask(f.Message)
	f.StderrTail = l.job.Secrets().Mask(f.StderrTail)
	return f
}

// earlierFailures returns the failures of the earlier attempts of an item
// that an ended process left waiting to retry.
func earlierFailures(rec state.ItemRecord) ([]itemtask.Failure, error) {
	if len(rec.Failures) == 0 {
		return nil, nil
	}
	var failures []itemtask.Failure
	if err := json.Unmarshal(rec.Failures, &failures); err != nil {
		return nil, fmt.Errorf("item %s: recorded failures: %w", rec.ID, err)
	}
	return failures, nil
}

// record counts a finished item for the error policy; l.mu is held.
func (l *ledger) record(failed bool) *errorpolicy.Verdict {
	l.counts.Pending--
	if l.tracker == nil {
		return nil
	}
	return l.tracker.Record(failed)
}

// result writes the result of an item that ended with out; failed is its
// last failure, nil for a success.
func (l *ledger) result(it *Item, out itemtask.Outcome, failed *itemtask.Failure, skipped bool) error {
	if l.results == nil {
		return nil
	}
	r := l.results.entry(it, out, failed)
	r.Skipped = skipped
	err := l.results.add(r)
	if err == nil {
		crashpoint.Hit(crashpoint.ResultWritten)
	}
	return err
}

// Counts returns the item counts so far.
func (l *ledger) Counts() state.ItemCounts {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.counts
}

// settleMerged records as succeeded each item of a resumed job whose merge
// the job branch has and whose last record is not a success: the process
// that merged it died before recording it, or something recorded a
// failure (the DLQ) over it. In the ledger's order: its result, its
// success in the item log, then out of the DLQ if it is there; then its
// branch is deleted. reconcile then finds it succeeded, and a crash
// anywhere in between leaves it to the next resume.
func settleMerged(ctx context.Context, j *job.Job, trees *workspace.Worktrees, log *itemLog, results *resultLog, dlq DeadLetters, itemsPath string) error {
	states, running := log.States()
	logged := func(index int) bool { st := states.State(index); return st == "" || st == state.ItemSucceeded }
	var its []*Item
	if err := items.ReadUnless(itemsPath, logged, func(it *Item) (bool, error) {
		its = append(its, &Item{ID: it.ID, Index: it.Index})
		return true, nil
	}); err != nil {
		return err
	}
	merged, err := trees.MergedItems(ctx, its)
	if err != nil || len(merged) == 0 {
		return err
	}
	ids := make([]string, 0, len(merged))
	for _, it := range its {
		if _, ok := merged[it.Index]; ok {
			ids = append(ids, it.ID)
		}
	}
	queued, err := dlq.Queued(ids...)
	if err != nil {
		return err
	}
	return items.ReadUnless(itemsPath, func(index int) bool { _, ok := merged[index]; return !ok }, func(it *Item) (bool, error) {
		out := merged[it.Index]
		attempt := max(running[it.Index].Attempt, 1) // an item the DLQ holds: its attempt is not in the index
		if err := results.add(results.entry(it, out, nil)); err != nil {
			return false, err
		}
		if err := log.Append(state.ItemRecord{Index: it.Index, ID: it.ID, State: state.ItemSucceeded, Attempt: attempt}); err != nil {
			return false, err
		}
		if queued[it.ID] {
			if err := dlq.Remove(it.ID); err != nil {
				return false, err
			}
			j.Emit(eventlog.DLQRemoved(it.ID, "merged into the job branch"))
		}
		j.Emit(eventlog.ItemSucceeded(it.ID, attempt, 0))
		trees.Recorded(ctx, out)
		return true, nil
	})
}

// removeSucceeded takes out of the DLQ the items it still holds that
// the item log has as succeeded: a process died between logging the
// success of an item it found merged (settleMerged) or retried and taking
// it out. It reads the DLQ, not the succeeded items.
func removeSucceeded(j *job.Job, dlq DeadLetters, states *state.ItemStates) error {
	if states.Count(state.ItemSucceeded) == 0 {
		return nil
	}
	var ids []string
	err := dlq.Each(func(id string, index int) {
		if states.State(index) == state.ItemSucceeded {
			ids = append(ids, id)
		}
	})
	if err != nil || len(ids) == 0 {
		return err
	}
	for _, id := range ids {
		if err := dlq.Remove(id); err != nil {
			return err
		}
		j.Emit(eventlog.DLQRemoved(id, "succeeded before a crash"))
	}
	return nil
}

// reconcile turns the item log's states into the starting state of a
// (resumed) job: finished items are skipped by the map phase (done); an
// item last seen running that the DLQ holds failed after the DLQ write
// and before its state was logged, so it is recorded as in the DLQ now,
// with its result (which goes between the two, so it may be missing:
// written again, without the lost output); the other items last seen
// running are returned with their checkpoints. It reads the log's index
// and the lines after it, never every item's record.
func reconcile(j *job.Job, log *itemLog, results *resultLog, dlq DeadLetters, itemsPath string, total int) (done *state.ItemStates, running map[int]state.ItemRecord, counts state.ItemCounts, err error) {
	states, running := log.States()
	if err := removeSucceeded(j, dlq, states); err != nil {
		return nil, nil, counts, err
	}
	if len(running) > 0 {
		ids := make([]string, 0, len(running))
		for _, rec := range running {
			ids = append(ids, rec.ID)
		}
		queued, err := dlq.Queued(ids...)
		if err != nil {
			return nil, nil, counts, err
		}
		settled := map[int]state.ItemRecord{}
		for i, rec := range running {
			if queued[rec.ID] {
				settled[i] = rec
			}
		}
		if len(settled) > 0 {
			err := items.ReadUnless(itemsPath, func(i int) bool { _, ok := settled[i]; return !ok }, func(it *Item) (bool, error) {
				rec, ok := settled[it.Index]
				if !ok {
					return true, nil
				}
				lost := itemtask.Outcome{Duration: time.Duration(rec.DurationMS) * time.Millisecond}
				if err := results.add(results.entry(it, lost, &itemtask.Failure{Message: "recorded in the DLQ before a crash"})); err != nil {
					return false, err
				}
				rec.State, rec.Error, rec.Steps = state.ItemDLQ, "recorded in the DLQ before a crash", nil
				return true, log.Append(rec)
			})
			if err != nil {
				return nil, nil, counts, err
			}
			states, running = log.States()
		}
	}
	counts.Total = total
	counts.Succeeded = states.Count(state.ItemSucceeded)
	counts.DLQ = states.Count(state.ItemDLQ)
	counts.Failed = counts.DLQ
	counts.Skipped = states.Count(state.ItemSkipped)
	counts.Pending = total - counts.Succeeded - counts.DLQ - counts.Skipped
	if counts.Pending < 0 {
		return nil, nil, counts, errors.New("item log has records for more items than the items file")
	}
	return states, running, counts, nil
}
