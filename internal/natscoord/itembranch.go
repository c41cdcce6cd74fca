package natscoord

import (
	"context"

	"github.com/runnerdev/runner/internal/itemtask"
)

// itemBranchFree fails t's attempt before it is sent, kind worktree and
// with the message a run in this process gives, when git could not make
// its item's branch in the user's repository, where the branch comes back
// with the item's commits: a ref in its way (an old job's branch). It
// reports false with that outcome. A task that names no tip (no worktree,
// or an ended process's) is not checked.
func (d *Dispatcher) itemBranchFree(ctx context.Context, t itemtask.Task) (itemtask.Outcome, bool) {
	if t.Tip == "" || d.git == nil {
		return itemtask.Outcome{}, true
	}
	err := d.git.repo.CheckItemBranch(ctx, t.Index, t.ItemID, t.Tip)
	if err == nil || ctx.Err() != nil {
		return itemtask.Outcome{}, true // interrupted: the wait says so
	}
	return t.FailedWith(itemtask.KindWorktree, err), false
}
