package natscoord

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/runnerdev/runner/internal/itemtask"
	"github.com/runnerdev/runner/internal/natsconn"
)

// view is what the server holds of the job, as look read it.
type view struct {
	specLost bool // the jobs bucket lost the job's spec, or is gone
	// tasks count the job's tasks in the tasks stream, by subject. (A left
	// item's may be of another attempt, in a crash that lost a task's
	// acknowledgement: adopted, it ends as a duplicate, and the next
	// check sends the item's.)
	tasks map[string]uint64
	// carried is the subject of the task message in the stream that
	// carries each left item's task, by index (an ended process's batch:
	// its subject is not in the item log), read only when there are left
	// records.
	carried map[int]string
	// results are the last result stored of each item whose task the
	// stream does not hold, by index, read after tasks: a worker
	// acknowledges its task only once its result is stored, so a task
	// gone from the first read has its result in the second, unless it
	// came meanwhile.
	results map[int]inbound
	now     time.Time
}

// move is a record's change of phase that reconcile asks for, made only
// while the record is as reconcile saw it (key, from). published to
// published sends its task again.
type move struct {
	index    int
	key      uint64
	from, to phase
	in       inbound // to resulted: the result read from the stream
	subject  string  // left to published: the message that carries its task
}

// plan is what reconcile asks for.
type plan struct {
	putSpec bool
	// keepGit: the job's git bucket is made again if the server lost it,
	// with the bundles of tips, before a task is sent again.
	keepGit bool
	tips    []string
	moves   []move
}

// resultInFlight is how long a stored result may take to reach this
// process through the job's consumer before reconcile takes it from the
// stream: it comes within milliseconds unless its delivery was lost (a
// consumer leader that stopped while sending it), and the consumer would
// send it again only after its ack_wait.
const resultInFlight = natsconn.CallDeadline

// reconcile is the plan that brings recs, the left and published records
// of a dispatcher in epoch, in line with v, the server's view of them: at
// open (the items an ended process left running), every CheckEvery while
// tasks are out, and after the server lost the job's consumer (restore).
// It is pure, and idempotent: for a view read after its moves, it asks
// for none again. A left item's task still in the stream is adopted, its
// result taken (the ended process may have had it delivered, unrecorded:
// the consumer sends it again only after its ack_wait), and with neither
// it is forgotten (its dispatch sends it). A published task the stream
// lost (with it, or dropped by a worker that found no spec of the job)
// with no result stored is sent again, an ended process's forgotten; a
// result stored whose delivery has not come within resultInFlight is
// taken. A spec the jobs bucket lost is put back.
func reconcile(recs []record, v view, epoch int) plan {
	p := plan{putSpec: v.specLost}
	for _, r := range recs {
		if r.phase == published {
			p.keepGit = true
			if r.task.Tip != "" && !slices.Contains(p.tips, r.task.Tip) {
				p.tips = append(p.tips, r.task.Tip)
			}
		}
		in, stored := v.results[r.index]
		switch subject := v.subject(r); {
		case v.tasks[subject] > 0:
			if r.phase == left {
				m := r.move(published)
				m.subject = subject
				p.moves = append(p.moves, m)
			}
		case stored && r.waitsFor(in.r.Attempt, in.r.Epoch, epoch):
			if r.phase == left || v.now.Sub(in.at) >= resultInFlight {
				m := r.move(resulted)
				m.in = in
				p.moves = append(p.moves, m)
			}
		case r.phase == published && r.task.DispatchID != "":
			p.moves = append(p.moves, r.move(published))
		default:
			p.moves = append(p.moves, r.move(gone))
		}
	}
	return p
}

// subject is the task message that carries r's task: its batch's, or,
// for a left record, the one v found that carries its item.
func (v view) subject(r record) string {
	if r.phase == left {
		return v.carried[r.index]
	}
	return r.subject
}

// check reads the server's view of the left and published records (look),
// reconciles them with it and makes the moves (apply).
func (d *Dispatcher) check(ctx context.Context) error {
	recs := d.snapshot()
	if len(recs) == 0 {
		return nil
	}
	v, err := d.look(ctx, recs)
	if err != nil {
		return err
	}
	d.apply(ctx, reconcile(recs, v, d.epoch))
	return nil
}

// look reads what the server holds of recs: the job's spec, the subjects
// of its tasks in the tasks stream then, if some record's task is not
// there, those of its results, and the last result of each such record.
func (d *Dispatcher) look(ctx context.Context, recs []record) (view, error) {
	v := view{specLost: d.specLost(ctx), results: map[int]inbound{}}
	var err error
	if v.tasks, err = subjects(ctx, d.objs.Tasks, natsconn.JobTasksSubject(d.queue, d.key)); err != nil {
		return v, fmt.Errorf("NATS stream %s: %w", natsconn.TasksStream, err)
	}
	if slices.ContainsFunc(recs, func(r record) bool { return r.phase == left }) {
		if v.carried, err = d.carried(ctx, v.tasks); err != nil {
			return v, fmt.Errorf("NATS stream %s: %w", natsconn.TasksStream, err)
		}
	}
	var stored map[string]uint64
	for _, r := range recs {
		if v.tasks[v.subject(r)] > 0 {
			continue
		}
		if stored == nil {
			if stored, err = subjects(ctx, d.objs.Results, natsconn.JobResultsSubject(d.key)); err != nil {
				return v, fmt.Errorf("NATS stream %s: %w", natsconn.ResultsStream, err)
			}
		}
		subject := natsconn.ResultSubject(d.key, r.index)
		if stored[subject] == 0 {
			continue
		}
		cctx, cancel := context.WithTimeout(ctx, natsconn.CallDeadline)
		raw, err := d.objs.Results.GetLastMsgForSubject(cctx, subject)
		cancel()
		var in inbound
		switch {
		case errors.Is(err, jetstream.ErrMsgNotFound):
		case err != nil:
			return v, fmt.Errorf("NATS stream %s: %w", natsconn.ResultsStream, err)
		case json.Unmarshal(raw.Data, &in.r) == nil:
			in.seq, in.at = raw.Sequence, raw.Time
			v.results[r.index] = in
		}
	}
	v.now = time.Now()
	return v, nil
}

// carried reads the task messages on subjects (one each: a batch's
// subject is its own) and returns the subject of each item's task.
func (d *Dispatcher) carried(ctx context.Context, subjects map[string]uint64) (map[int]string, error) {
	carried := map[int]string{}
	for subject := range subjects {
		cctx, cancel := context.WithTimeout(ctx, natsconn.CallDeadline)
		raw, err := d.objs.Tasks.GetLastMsgForSubject(cctx, subject)
		cancel()
		var b natsconn.Batch
		switch {
		case errors.Is(err, jetstream.ErrMsgNotFound): // taken meanwhile
		case err != nil:
			return nil, err
		case json.Unmarshal(raw.Data, &b) == nil:
			for _, t := range b.Tasks {
				carried[t.Index] = subject
			}
		}
	}
	return carried, nil
}

// subjects counts the messages of stream s on each subject that filter
// matches.
func subjects(ctx context.Context, s jetstream.Stream, filter string) (map[string]uint64, error) {
	ctx, cancel := context.WithTimeout(ctx, natsconn.CallDeadline)
	defer cancel()
	info, err := s.Info(ctx, jetstream.WithSubjectFilter(filter))
	if err != nil {
		return nil, err
	}
	return info.State.Subjects, nil
}

// specLost reports whether the jobs bucket lost the job's spec, or is
// gone; not when the server does not answer.
func (d *Dispatcher) specLost(ctx context.Context) bool {
	ctx, cancel := context.WithTimeout(ctx, natsconn.CallDeadline)
	defer cancel()
	_, err := d.objs.Jobs.Get(ctx, d.key)
	if err == nil || errors.Is(err, jetstream.ErrKeyNotFound) {
		return err != nil
	}
	_, err = d.js.KeyValue(ctx, natsconn.JobsBucket)
	return errors.Is(err, jetstream.ErrBucketNotFound)
}

// apply makes p's moves, each only on a record still as reconcile saw it:
// the spec first (else workers drop the job's tasks), then the git
// bucket (else tasks sent again find no commit to start from).
func (d *Dispatcher) apply(ctx context.Context, p plan) {
	if p.putSpec {
		d.objs.Warnf("job %s's spec was gone from NATS bucket %s: putting it back", d.j.ID(), natsconn.JobsBucket)
		if err := d.specBack(ctx); err != nil { // tasks sent again would be dropped: the next check tries again
			d.objs.Warnf("job %s: putting back its spec: %v", d.j.ID(), err)
			return
		}
	}
	gitKept := !p.keepGit || d.keepGit(ctx, p.tips)
	for _, m := range p.moves {
		d.mu.Lock()
		r := d.items[m.index]
		switch {
		case r == nil || r.key != m.key || r.phase != m.from || (m.to == published && m.from == published && !gitKept):
			d.mu.Unlock()
		case m.to == resulted:
			id := r.id
			d.take(r, m.in)
			if m.from == published {
				d.objs.Warnf("job %s: item %s's result did not come through NATS consumer %s: read from stream %s", d.j.ID(), id, natsconn.JobConsumer(d.key), natsconn.ResultsStream)
			}
		case m.to == gone:
			delete(d.items, m.index)
			d.mu.Unlock()
		case m.from == published:
			t := r.task
			d.mu.Unlock()
			d.resend(ctx, r, t)
		default:
			r.phase = m.to
			if m.subject != "" {
				r.subject = m.subject
			}
			d.mu.Unlock()
		}
	}
}

// specBack makes the jobs bucket again if it is gone and puts the job's
// spec in it.
func (d *Dispatcher) specBack(ctx context.Context) error {
	if err := d.objs.Remade().OpenBucket(ctx); err != nil {
		return err
	}
	return d.putSpec(ctx, natsconn.StatusRunning)
}

// keepGit makes the job's git bucket again when the server lost it
// (map.isolation: worktree), with the bundles of tips. It reports false,
// with a warning, when it could not.
func (d *Dispatcher) keepGit(ctx context.Context, tips []string) bool {
	if d.git == nil {
		return true
	}
	remade, err := d.git.keep(ctx, d.objs, d.key, tips)
	if remade {
		d.objs.Warnf("the NATS server lost job %s's git bucket %s (restarted on an empty store?): making it again with the commits its tasks start from", d.j.ID(), natsconn.GitBucket(d.key))
	}
	if err != nil {
		d.objs.Warnf("job %s: checking its git bucket %s: %v", d.j.ID(), natsconn.GitBucket(d.key), err)
		return false
	}
	return true
}

// resend publishes r's task t again, in a batch of its own (whose
// message id the stream's duplicate window has not seen). The task is in
// the stream no more, so no worker runs it meanwhile. One that fails is
// sent at the next check.
func (d *Dispatcher) resend(ctx context.Context, r *record, t itemtask.Task) {
	d.objs.Warnf("job %s: item %s's task is gone from NATS stream %s with no result: sending it again", d.j.ID(), t.ItemID, natsconn.TasksStream)
	ctx, cancel := context.WithTimeout(ctx, 2*natsconn.CallDeadline)
	defer cancel()
	d.send(ctx, r, t)
}

// restore makes the NATS objects again when a pull failed because the
// server lost the job's consumer (restarted on an empty store): first the
// jobs bucket with the job's spec, so that no worker takes a task of the
// job for one of an unknown job, then the streams and the consumer; then
// check sends again the tasks it lost. Only the items in flight can run
// twice: a result a worker stores after this is taken, the other one
// dropped as a duplicate.
func (d *Dispatcher) restore(ctx context.Context, pullErr error) {
	if !d.objs.Lost(ctx, pullErr, natsconn.ResultsStream, natsconn.JobConsumer(d.key)) {
		return
	}
	d.objs.Warnf("the NATS server lost job %s's consumer (restarted on an empty store?): making the NATS objects again and sending the tasks it lost", d.j.ID())
	objs := d.objs.Remade()
	err := d.specBack(ctx)
	if err == nil {
		err = objs.OpenStreams(ctx)
	}
	var results jetstream.Consumer
	if err == nil {
		results, err = objs.JobResults(ctx, d.key)
	}
	if err == nil {
		d.pulls.Use(results)
		err = d.check(ctx)
	}
	if err != nil {
		d.objs.Warnf("job %s: %v", d.j.ID(), err) // the next failed pull, or check, tries again
	}
}
