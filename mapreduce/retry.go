package mapreduce

import (
	"context"
	"errors"
	"sync"

	"github.com/runnerdev/runner/errorpolicy"
	"github.com/runnerdev/runner/internal/attemptlog"
	"github.com/runnerdev/runner/internal/dlqsettle"
	"github.com/runnerdev/runner/internal/eventlog"
	"github.com/runnerdev/runner/internal/itemtask"
	"github.com/runnerdev/runner/internal/job"
	"github.com/runnerdev/runner/internal/state"
	"github.com/runnerdev/runner/internal/workspace"
	"github.com/runnerdev/runner/workflow"
)

// RetryQueue is a job's DLQ as `dlq retry` uses it.
type RetryQueue interface {
	DeadLetters
	Claimer
}

// RetryOptions configure a `dlq retry`.
type RetryOptions struct {
	MaxParallel int              // overrides map.max_parallel when above 0
	Dispatcher  itemtask.Backend // where items run: InProcess, agents, NATS workers
	Hard        bool             // the budget's stop stops the items running too (Options.Hard)
	// Select returns the items to retry; it is called once the DLQ is
	// settled with the item log.
	Select func() ([]*Item, error)
}

// RetryResult is what a `dlq retry` did.
type RetryResult struct {
	Selected  int // items selected
	Succeeded int // ran and left the DLQ
	Failed    int // ran and failed again
	Skipped   int // claimed by another retry, or not run because ctx ended
	Remaining int // items in the DLQ afterwards
}

// RetryDLQ is `dlq retry` on a job opened with job.Attach: it settles the
// job's DLQ with its item log (items that a killed retry ran to success
// leave the DLQ instead of running again), runs the selected items
// (RetryDead) and settles again; Remaining is the DLQ as it is then.
func RetryDLQ(ctx context.Context, j *job.Job, q RetryQueue, opts RetryOptions) (RetryResult, error) {
	var res RetryResult
	if _, err := dlqsettle.Settle(filesOf(j), q); err != nil {
		return res, err
	}
	items, err := opts.Select()
	if err != nil {
		return res, err
	}
	counts, err := RetryDead(ctx, j, items, opts, q)
	res.Selected, res.Succeeded, res.Failed, res.Skipped = len(items), counts.Succeeded, counts.Failed, counts.Pending
	now, serr := dlqsettle.Settle(filesOf(j), q)
	res.Remaining = now.DLQ
	return res, errors.Join(err, serr)
}

// RetryDead runs the job's agent template again on items taken from its
// DLQ (a job opened with job.Attach), as opts says (its Select is not
// called): an item that succeeds leaves the
// DLQ; one that fails again gets the failure appended to its history and
// stays. An item that another process has claimed is left alone. It
// returns the counts of this retry (Total: items asked for; Pending: those
// claimed elsewhere or not run because ctx ended).
//
// With map.isolation: worktree each item runs in a fresh worktree from the
// job branch's tip and is merged back as in the job's run; the merges of
// all the retries of the job take turns (the job's merge lock), and an
// item whose branch a killed retry merged leaves the DLQ without running.
func RetryDead(ctx context.Context, j *job.Job, items []*Item, opts RetryOptions, q RetryQueue) (counts state.ItemCounts, err error) {
	if err := Supports(j.Workflow(), opts.Dispatcher); err != nil {
		return state.ItemCounts{}, err
	}
	parallel, err := maxParallel(j.Workflow().Map, j.Scope().Under(ctx), opts.MaxParallel)
	if err != nil {
		return state.ItemCounts{}, err
	}
	trees, merged, err := openRetryTrees(ctx, j, items)
	if err != nil {
		return state.ItemCounts{}, err
	}
	if trees != nil {
		defer func() { err = errors.Join(err, trees.EndRetry(ctx)) }()
	}
	itemLog, err := filesOf(j).open()
	if err != nil {
		return state.ItemCounts{}, err
	}
	defer itemLog.Close()
	l := &ledger{job: j, items: itemLog, dlq: q, action: errorpolicy.DLQ, fromDLQ: true,
		counts: state.ItemCounts{Total: len(items), Pending: len(items), DLQ: len(items)}}
	s, err := newScheduler(ctx, j, l, parallel, trees, dispatching{backend: opts.Dispatcher, run: attemptlog.RunDLQRetry})
	if err != nil {
		return state.ItemCounts{}, err
	}
	if c := j.Meta().Items; c != nil {
		s.total = c.Total
	}
	defer s.close()
	ictx, stopItems := s.itemsContext(ctx, opts.Hard)
	defer stopItems()
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
	j.Emit(eventlog.DLQRetryStarted(len(items), parallel))
	for _, it := range items {
		claimed, err := q.Claim(it.ID)
		if err != nil {
			s.fail(err)
			break
		}
		if !claimed {
			j.Emit(eventlog.ItemSkipped(it.ID, "claimed by another dlq retry"))
			continue
		}
		if out, ok := merged[it.Index]; ok {
			// The killed retry that merged it may have left its worktree.
			if err := trees.CloseItem(ctx, trees.TreeOf(it)); err != nil {
				s.fail(err)
				s.ended(it)
				break
			}
			s.recordMerged(ctx, it, 1, out)
			s.ended(it)
			continue
		}
		if !s.dispatch(ictx, it) {
			q.Release(it.ID)
			break
		}
	}
	s.wait()
	counts = l.Counts()
	j.Emit(eventlog.DLQRetryFinished(eventlog.ItemCounts(counts)))
	switch {
	case s.fatalErr != nil:
		return counts, s.fatalErr
	case ctx.Err() != nil:
		return counts, context.Cause(ctx)
	case s.stopped != nil:
		return counts, errors.Join(&StoppedError{Verdict: *s.stopped, Left: counts.Pending}, releaseErr)
	}
	return counts, releaseErr
}

// openRetryTrees returns the worktrees of a job whose map runs with
// isolation: worktree, readied for a dlq retry of items, and the items
// whose branch a killed retry merged (see startRetry); nil without
// isolation.
func openRetryTrees(ctx context.Context, j *job.Job, items []*Item) (*workspace.Worktrees, map[int]itemtask.Outcome, error) {
	trees, err := workspace.OpenWorktrees(ctx, refsOf(j), j.Workflow().Map, j.Executor().Env, j.Layout())
	if trees == nil || err != nil {
		return nil, nil, err
	}
	merged, err := trees.StartRetry(ctx, items)
	if err != nil {
		return nil, nil, err
	}
	return trees, merged, nil
}

// Unretryable reports whether a DLQ item whose last failure happened at
// the step labelled step (dlq.Failure.Step) is not eligible for `dlq
// retry`: that step of wf's agent template says retryable: false, its
// author's word that a failure of it must not run again by itself.
// `dlq retry` passes over such an item unless forced (--force), as
// Prodigy's reprocessor passes over an item that is not
// reprocess_eligible.
func Unretryable(wf *workflow.Workflow, step string) bool {
	if wf.Map == nil {
		return false
	}
	for s := range workflow.AllSteps(wf.Map.Template) {
		if s.Label(workflow.PhaseMap) == step {
			return !s.Retryable
		}
	}
	return false
}
