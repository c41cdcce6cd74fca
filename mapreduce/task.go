package mapreduce

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"sync/atomic"

	"github.com/runnerdev/runner/internal/eventlog"
	"github.com/runnerdev/runner/internal/items"
	"github.com/runnerdev/runner/internal/itemtask"
	"github.com/runnerdev/runner/workflow"
)

// mergeOf is what the events of the item's end say of its branch.
func mergeOf(out itemtask.Outcome) eventlog.Merge {
	return eventlog.Merge{Branch: out.Branch, Commits: len(out.Commits), Merged: out.Merged, Conflicts: out.Conflicts}
}

// Supports refuses a workflow whose items need what b cannot do, before
// the job starts.
func Supports(wf *workflow.Workflow, b itemtask.Backend) error {
	if b.Open == nil {
		return errors.New("mapreduce: no dispatcher: say where items run (InProcess, agents, NATS)")
	}
	if wf.Map != nil && wf.Map.Isolation == workflow.IsolationWorktree && !b.Can.Worktrees {
		return fmt.Errorf("items that run in git worktrees (map.isolation: worktree, as claude: steps and commit_required make the default) cannot run on %s yet: set map.isolation: none", b.Name)
	}
	return nil
}

// maxLost is how many times in a row an item's runner may be lost (the
// dispatch fails without an outcome) before the attempt counts as failed,
// so that an item that kills every runner it is given cannot loop for ever.
const maxLost = 3

// dispatchSeq numbers this process's dispatches; dispatchNonce tells them
// from another process's.
var (
	dispatchSeq   atomic.Uint64
	dispatchNonce = rand.Uint32()
)

// newDispatchID returns an id no other dispatch of any process has.
func newDispatchID(it *Item, attempt int) string {
	return fmt.Sprintf("%d.%d.%08x.%d", it.Index, attempt, dispatchNonce, dispatchSeq.Add(1))
}

// Item is one work item of a map phase.
type Item = items.Item
