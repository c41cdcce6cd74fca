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
		{"left, its task in the stream: adopted", rec(left, true, false), view{tasks: queued}, "0>2"},
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
