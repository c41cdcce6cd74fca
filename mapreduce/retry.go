package mapreduce

import (
	"context"
	"errors"
	"sync"

	"github.com/runnerdev/runner/errorpolicy"
	"github.com/runnerdev/runner/internal/eventlog"
	"github.com/runnerdev/runner/internal/itemtask"
	"github.com/runnerdev/runner/internal/job"
)

// RetryQueue is a job's DLQ as `dlq retry` uses it.
type RetryQueue interface {
	DeadLetters
	Claimer
}

// RetryOptions configure a `dlq retry`.
type RetryOptions struct {
	MaxParallel int              // overrides map.max_parallel when above 0
	Dispatcher  itemtask.Backend // where items run; the zero Backend: in this process (Local)
	Live        *itemtask.Live   // shows the items' output when they run in this process; nil: not
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
	if _, err := Settle(filesOf(j), q); err != nil {
		return res, err
	}
	items, err := opts.Select()
	if err != nil {
		return res, err
	}
	counts, err := RetryDead(ctx, j, items, opts, q)
	res.Selected, res.Succeeded, res.Failed, res.Skipped = len(items), counts.Succeeded, counts.Failed, counts.Pending
	now, serr := Settle(filesOf(j), q)
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
func RetryDead(ctx context.Context, j *job.Job, items []*Item, opts RetryOptions, q RetryQueue) (counts job.ItemCounts, err error) {
	if err := supported(j.Workflow(), opts.Dispatcher); err != nil {
		return job.ItemCounts{}, err
	}
	parallel, err := maxParallel(j.Workflow().Map, j.Scope(), opts.MaxParallel)
	if err != nil {
		return job.ItemCounts{}, err
	}
	trees, merged, err := openRetryTrees(ctx, j, items)
	if err != nil {
		return job.ItemCounts{}, err
	}
	if trees != nil {
		defer func() { err = errors.Join(err, trees.endRetry(ctx)) }()
	}
	itemLog, err := filesOf(j).open()
	if err != nil {
		return job.ItemCounts{}, err
	}
	defer itemLog.Close()
	l := &ledger{job: j, items: itemLog, dlq: q, action: errorpolicy.DLQ, fromDLQ: true,
		counts: job.ItemCounts{Total: len(items), Pending: len(items), DLQ: len(items)}}
	s, err := newScheduler(ctx, j, l, parallel, trees, dispatching{backend: opts.Dispatcher, live: opts.Live, run: RunDLQRetry})
	if err != nil {
		return job.ItemCounts{}, err
	}
	if c := j.Meta().Items; c != nil {
		s.total = c.Total
	}
	defer s.close()
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
			if err := trees.closeItem(ctx, trees.itemTree(it)); err != nil {
				s.fail(err)
				s.ended(it)
				break
			}
			s.recordMerged(ctx, it, 1, out)
			s.ended(it)
			continue
		}
		if !s.dispatch(ctx, it) {
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
	}
	return counts, releaseErr
}

// openRetryTrees returns the worktrees of a job whose map runs with
// isolation: worktree, readied for a dlq retry of items, and the items
// whose branch a killed retry merged (see startRetry); nil without
// isolation.
func openRetryTrees(ctx context.Context, j *job.Job, items []*Item) (*Worktrees, map[int]Outcome, error) {
	trees, err := OpenWorktrees(ctx, refsOf(j), j.Workflow().Map, j.Executor().Env, j.Path)
	if trees == nil || err != nil {
		return nil, nil, err
	}
	merged, err := trees.startRetry(ctx, items)
	if err != nil {
		return nil, nil, err
	}
	return trees, merged, nil
}

// ItemStates is a job's item log as SettleDLQ reads and amends it: the
// item files of a job this process holds, or a *state.Job that no process
// runs.
type ItemStates interface {
	ReadItemStates() (map[int]job.ItemRecord, error)
	AppendItemRecords(recs ...job.ItemRecord) error
}

// Settleable is a job whose item log and counts Settle brings up to date
// with its DLQ: the item files of a job this process holds, or a
// job.Stored.
type Settleable interface {
	ItemStates
	UpdateItemCounts(settle func(job.ItemCounts) (job.ItemCounts, error)) (job.ItemCounts, error)
}

// Settle reconciles a MapReduce job's item log with its DLQ (SettleDLQ)
// and rewrites the job's counts to match (see UpdateItemCounts). It
// returns the counts.
func Settle(j Settleable, q RetryQueue) (job.ItemCounts, error) {
	return j.UpdateItemCounts(func(c job.ItemCounts) (job.ItemCounts, error) { return SettleDLQ(j, q, c) })
}

// RecordPurged records items that `dlq purge` took out of a job's DLQ:
// each counts as skipped from now on (PurgedNote), with a dlq_removed
// event, and the job's counts are settled with its DLQ. Should it be
// killed before this, the next settle records them the same way.
func RecordPurged(j job.Stored, q RetryQueue, items []*Item) error {
	recs := make([]job.ItemRecord, len(items))
	events := make([]eventlog.Event, len(items))
	for i, it := range items {
		recs[i] = job.ItemRecord{Index: it.Index, ID: it.ID, State: job.ItemSkipped, Error: PurgedNote}
		events[i] = eventlog.DLQRemoved(it.ID, "purged")
	}
	if err := j.AppendItemRecords(recs...); err != nil {
		return err
	}
	if err := j.Emit(events...); err != nil {
		return err
	}
	_, err := Settle(j, q)
	return err
}

// PurgedNote is the error of the skipped record of an item purged from
// the DLQ.
const PurgedNote = "purged from the DLQ"

// SettleDLQ brings a job's item log and its DLQ into agreement after a
// `dlq retry` or `dlq purge` that was killed between its two writes, and
// returns the job's item counts as they are now (counts gives Total and
// Failed, which stay: failed counts the items that finally failed in the
// job's run, whatever became of them since).
//
//   - An item logged as succeeded that is still queued: a retry logs the
//     success before it removes the item, so it is removed now (unless a
//     running retry holds it), instead of being run again.
//   - An item logged as in the DLQ that is no longer queued: a purge
//     removes items before it logs them as skipped, so it is logged now.
//
// Then each item is exactly one of: in the DLQ (whatever its last record,
// e.g. running in a retry), succeeded, skipped, or pending, and these add
// up to Total.
func SettleDLQ(j ItemStates, q RetryQueue, counts job.ItemCounts) (job.ItemCounts, error) {
	records, err := j.ReadItemStates()
	if err != nil {
		return counts, err
	}
	ids := make([]string, 0, len(records))
	for _, rec := range records {
		ids = append(ids, rec.ID)
	}
	queued, err := q.Queued(ids...)
	if err != nil {
		return counts, err
	}
	var purged []job.ItemRecord
	for i, rec := range records {
		switch {
		case rec.State == job.ItemSucceeded && queued[rec.ID]:
			if ok, err := q.Claim(rec.ID); err != nil || !ok {
				if err != nil {
					return counts, err
				}
				continue // a running retry has it
			}
			if err := q.Remove(rec.ID); err != nil {
				return counts, err
			}
			queued[rec.ID] = false
		case rec.State == job.ItemDLQ && !queued[rec.ID]:
			rec.State, rec.Error = job.ItemSkipped, PurgedNote
			purged = append(purged, rec)
			records[i] = rec
		}
	}
	if err := j.AppendItemRecords(purged...); err != nil {
		return counts, err
	}
	counts.Succeeded, counts.DLQ, counts.Skipped = 0, 0, 0
	for _, rec := range records {
		switch {
		case queued[rec.ID]:
			counts.DLQ++
		case rec.State == job.ItemSucceeded:
			counts.Succeeded++
		case rec.State == job.ItemSkipped:
			counts.Skipped++
		}
	}
	counts.Pending = max(counts.Total-counts.Succeeded-counts.DLQ-counts.Skipped, 0)
	return counts, nil
}
