package natscoord

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/runnerdev/runner/internal/itemtask"
	"github.com/runnerdev/runner/internal/natsconn"
)

// reconcile's moves for each record and view, without a server: the
// records of a dispatcher in epoch 2 at now.
func TestReconcile(t *testing.T) {
	now := time.Now()
	const epoch = 2
	rec := func(p phase, ended, dispatched bool) record {
		r := record{key: 7, index: 3, attempt: 2, id: "c", phase: p, ended: ended, subject: "task.3"}
		if dispatched {
			r.task = itemtask.Task{Index: 3, ItemID: "c", Attempt: 2, DispatchID: "c.1", Tip: "abc"}
		}
		return r
	}
	result := func(attempt, epoch int, age time.Duration) map[int]inbound {
		return map[int]inbound{3: {r: natsconn.Result{Index: 3, Attempt: attempt, Epoch: epoch, Worker: "w"}, seq: 9, at: now.Add(-age)}}
	}
	queued := map[string]uint64{"task.3": 1}
	old, young := resultInFlight, resultInFlight/10
	for _, tc := range []struct {
		name string
		r    record
		v    view
		want string // the moves, as from>to (in: the result's seq)
	}{
		{"left, its task in the stream: adopted", rec(left, true, false), view{tasks: queued, carried: map[int]string{3: "task.3"}}, "0>2"},
		{"left, a task of other items in the stream: forgotten", rec(left, true, false), view{tasks: queued, carried: map[int]string{4: "task.3"}}, "0>5"},
		{"left, its result stored by an earlier epoch: taken however young", rec(left, true, false), view{results: result(2, 1, 0)}, "0>3 in 9"},
		{"left, another attempt's result: forgotten", rec(left, true, false), view{results: result(1, 1, old)}, "0>5"},
		{"left, nothing on the server: forgotten", rec(left, true, false), view{}, "0>5"},
		{"published, its task in the stream: waited for", rec(published, false, true), view{tasks: queued}, ""},
		{"published, its result stored long enough: taken", rec(published, false, true), view{results: result(2, epoch, old)}, "2>3 in 9"},
		{"published, its result just stored: on its way", rec(published, false, true), view{results: result(2, epoch, young)}, ""},
		{"published, lost with no result: sent again", rec(published, false, true), view{}, "2>2"},
		{"published, an earlier epoch's result only: sent again", rec(published, false, true), view{results: result(2, 1, old)}, "2>2"},
		{"adopted, lost before its dispatch: forgotten", rec(published, true, false), view{}, "2>5"},
		{"adopted and dispatched, lost: sent again", rec(published, true, true), view{}, "2>2"},
		{"adopted, an earlier epoch's result: taken", rec(published, true, true), view{results: result(2, 1, old)}, "2>3 in 9"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.v.now = now
			p := reconcile([]record{tc.r}, tc.v, epoch)
			if got := moves(p); got != tc.want {
				t.Errorf("moves %q, want %q", got, tc.want)
			}
			if p.putSpec {
				t.Errorf("plan %+v puts the spec back; the view has it", p)
			}
			if wantGit := tc.r.phase == published; p.keepGit != wantGit || (tc.r.task.Tip != "" && !slices.Equal(p.tips, []string{"abc"})) {
				t.Errorf("keepGit %v with tips %q; want %v with the tip of a dispatched task", p.keepGit, p.tips, wantGit)
			}
			// Idempotent: once its moves are made, the server's view of
			// them asks for none.
			after, v := madeMoves(tc.r, p), tc.v
			if len(p.moves) > 0 && p.moves[0].from == p.moves[0].to {
				v.tasks = queued
			}
			if again := moves(reconcile(after, v, epoch)); again != "" {
				t.Errorf("after its moves, reconcile moves %q", again)
			}
		})
	}
}

// The items of one task message (a batch) are reconciled each on its own:
// an ended process's items that the message still carries are adopted,
// with its subject, and those it recorded (no record) ask for nothing; a
// batch partly recorded keeps its unfinished items waiting while the
// message is in the stream, and sends only them again when it is lost.
func TestReconcileBatches(t *testing.T) {
	now := time.Now()
	const epoch = 2
	item := func(index int, p phase, subject string) record {
		r := record{key: uint64(10 + index), index: index, attempt: 1, id: fmt.Sprint(index + 1), phase: p, ended: p == left, subject: subject}
		if p != left {
			r.task = itemtask.Task{Index: index, Attempt: 1, DispatchID: fmt.Sprint("d", index)}
		}
		return r
	}
	for _, tc := range []struct {
		name string
		recs []record
		v    view
		want map[int]move // by index: the move of each item's record
	}{
		{"an ended process's batch, one of its three items recorded: the two others adopted with its subject",
			[]record{item(3, left, ""), item(5, left, "")},
			view{tasks: map[string]uint64{"b": 1}, carried: map[int]string{3: "b", 4: "b", 5: "b"}},
			map[int]move{3: {from: left, to: published, subject: "b"}, 5: {from: left, to: published, subject: "b"}}},
		{"a batch partly recorded, in the stream: its unfinished items wait",
			[]record{item(3, published, "b"), item(5, published, "b")},
			view{tasks: map[string]uint64{"b": 1}},
			map[int]move{}},
		{"a batch partly recorded, lost: only its unfinished items sent again, one with its result stored taken",
			[]record{item(3, published, "b"), item(5, published, "b")},
			view{results: map[int]inbound{5: {r: natsconn.Result{Index: 5, Attempt: 1, Epoch: epoch}, seq: 8, at: now.Add(-resultInFlight)}}},
			map[int]move{3: {from: published, to: published}, 5: {from: published, to: resulted}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.v.now = now
			p := reconcile(tc.recs, tc.v, epoch)
			got := map[int]move{}
			for _, m := range p.moves {
				got[m.index] = move{from: m.from, to: m.to, subject: m.subject}
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("moves %v, want %v", got, tc.want)
			}
		})
	}
}

// A worker that got a batch delivered again runs only the items whose
// results the coordinator awaits: a recorded item (no record), one whose
// result is here, another attempt's or an earlier epoch's task of an item
// sent again are not run again.
func TestAwaitedAnswersWhatADispatchWaitsFor(t *testing.T) {
	const epoch = 2
	items := map[int]*record{
		1: {index: 1, attempt: 1, phase: published},
		2: {index: 2, attempt: 1, phase: resulted},
		3: {index: 3, attempt: 1, phase: recording},
		4: {index: 4, attempt: 2, phase: published},
		5: {index: 5, attempt: 1, phase: published, ended: true}, // adopted from an ended process
		6: {index: 6, attempt: 1, phase: sending},
	}
	q := natsconn.Awaited{Items: []natsconn.AwaitedItem{
		{Index: 0, Attempt: 1, Epoch: epoch}, // recorded: no record
		{Index: 1, Attempt: 1, Epoch: epoch},
		{Index: 1, Attempt: 1, Epoch: 1}, // an earlier epoch's task of an item sent again
		{Index: 2, Attempt: 1, Epoch: epoch},
		{Index: 3, Attempt: 1, Epoch: epoch},
		{Index: 4, Attempt: 1, Epoch: epoch},
		{Index: 5, Attempt: 1, Epoch: 1},
		{Index: 6, Attempt: 1, Epoch: epoch},
	}}
	want := []bool{false, true, false, false, false, false, true, true}
	if got := awaited(items, q, epoch).Awaited; !slices.Equal(got, want) {
		t.Errorf("awaited %v, want %v", got, want)
	}
}

// The job's spec is put back when the jobs bucket lost it, whatever the
// records.
func TestReconcilePutsTheSpecBack(t *testing.T) {
	for _, lost := range []bool{false, true} {
		if p := reconcile(nil, view{specLost: lost}, 1); p.putSpec != lost {
			t.Errorf("spec lost %v: plan %+v", lost, p)
		}
	}
}

// moves is p's moves as from>to, with the seq of a result taken.
func moves(p plan) string {
	s := ""
	for _, m := range p.moves {
		s += fmt.Sprintf("%d>%d", m.from, m.to)
		if m.to == resulted {
			s += fmt.Sprintf(" in %d", m.in.seq)
		}
	}
	return s
}

// madeMoves is r after p's moves, as check looks at it: left and
// published records only.
func madeMoves(r record, p plan) []record {
	for _, m := range p.moves {
		r.phase = m.to
	}
	if r.phase != left && r.phase != published {
		return nil
	}
	return []record{r}
}
