package natscoord

import (
	"context"
	"time"

	"github.com/runnerdev/runner/internal/itemtask"
)

// itemBranchFree fails t's attempt before it is sent, kind worktree and
// with the message a run in this process gives, when git could not make
// its item's branch in the user's repository, where the branch comes back
// with the item's commits: a ref in its way (an old job's branch). It
// reports false with that outcome. A task that names no tip (no worktree,
// or an ended process's) is not checked.
func (d *Dispatcher) itemBranchFree(ctx context.Context, t itemtask.Task) (itemtask.Outcome, bool) {
	if t.Tip == "" || d.git == nil || d.git.repo.CheckItemBranch == nil {
		return itemtask.Outcome{}, true
	}
	err := d.git.repo.CheckItemBranch(ctx, t.Index, t.ItemID, t.Tip)
	if err == nil || ctx.Err() != nil {
		return itemtask.Outcome{}, true // interrupted: the wait says so
	}
	return notSent(t, itemtask.KindWorktree, err), false
}

// notSent is the failed outcome of t's attempt, never sent to a worker,
// of kind with err's message.
func notSent(t itemtask.Task, kind string, err error) itemtask.Outcome {
	return itemtask.Outcome{DispatchID: t.DispatchID, Failed: true, Failure: itemtask.Failure{
		Attempt: t.Attempt, At: time.Now(), Kind: kind, ExitCode: -1, Message: err.Error(),
	}}
}
