package mapreduce

import (
	"context"
	"errors"
	"sync"

	"github.com/runnerdev/runner/errorpolicy"
	"github.com/runnerdev/runner/workflow"
	"github.com/runnerdev/runner/workflow/state"
)

// RetryQueue is a job's DLQ as `dlq retry` uses it.
type RetryQueue interface {
	DeadLetters
	Claimer
}

// RetryDead runs the job's agent template again on items taken from its
// DLQ (a job opened with workflow.Attach): an item that succeeds leaves the
// DLQ; one that fails again gets the failure appended to its history and
// stays. An item that another process has claimed is left alone. It
// returns the counts of this retry (Total: items asked for; Pending: those
// claimed elsewhere or not run because ctx ended).
func RetryDead(ctx context.Context, j *workflow.Job, items []*Item, override int, q RetryQueue) (state.ItemCounts, error) {
	parallel, err := maxParallel(j.Workflow.Map, j.Scope, override)
	if err != nil {
		return state.ItemCounts{}, err
	}
	itemLog, err := j.State.OpenItemLog()
	if err != nil {
		return state.ItemCounts{}, err
	}
	defer itemLog.Close()
	l := &ledger{job: j, items: itemLog, dlq: q, action: errorpolicy.DLQ, fromDLQ: true,
		counts: state.ItemCounts{Total: len(items), Pending: len(items), DLQ: len(items)}}
	s := newScheduler(j, l, parallel)
	var (
		mu         sync.Mutex
		releaseErr error
	)
	s.ended = func(it *Item) {
		err := q.Release(it.ID)
		mu.Lock()
		releaseErr = errors.Join(releaseErr, err)
		mu.Unlock()
	}
	j.Emit("dlq_retry_started", map[string]any{"items": len(items), "max_parallel": parallel})
	for _, it := range items {
		claimed, err := q.Claim(it.ID)
		if err != nil {
			s.fail(err)
			break
		}
		if !claimed {
			j.Emit("item_skipped", map[string]any{"item_id": it.ID, "reason": "claimed by another dlq retry"})
			continue
		}
		if !s.dispatch(ctx, it) {
			q.Release(it.ID)
			break
		}
	}
	s.wait()
	counts := l.Counts()
	fields := countFields(counts)
	j.Emit("dlq_retry_finished", fields)
	switch {
	case s.fatalErr != nil:
		return counts, s.fatalErr
	case ctx.Err() != nil:
		return counts, context.Cause(ctx)
	}
	return counts, releaseErr
}
