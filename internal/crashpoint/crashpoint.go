package crashpoint

// The points, each named after the write that has just been made.
const (
	JobWorktreeAdded     = "job-worktree-added"     // the job worktree made (a started job)
	ItemStarted          = "item-started"           // an item logged as running
	ItemWorktreeAdded    = "item-worktree-added"    // an item's worktree made, before its steps
	ItemStepsDone        = "item-steps-done"        // an item's steps (and commits) done, its worktree still there
	ItemWorktreeRemoved  = "item-worktree-removed"  // an item's worktree removed, before its merge
	ItemMerged           = "item-merged"            // an item's branch merged into the job branch
	ResultWritten        = "result-written"         // an item's line in results.jsonl
	DLQAdded             = "dlq-added"              // a failed item added to the DLQ
	ItemLogged           = "item-logged"            // an item's end in the item log
	DLQRemoved           = "dlq-removed"            // a retried item out of the DLQ
	ItemBranchDeleted    = "item-branch-deleted"    // a recorded item's branch deleted
	ItemWorktreesRemoved = "item-worktrees-removed" // at a job's end, the items' worktrees removed
	JobWorktreeRemoved   = "job-worktree-removed"   // at a job's or retry's end, the job worktree removed

	// The points of runner jobs rm and prune, which only removals reach
	// (not in All; TestJobsRmCrash): the job's directory renamed to its
	// tombstone, a worktree of the job's removed (or forgotten), a branch
	// of the job's deleted.
	JobBuried       = "job-buried"
	RemovedWorktree = "removed-worktree"
	RemovedBranch   = "removed-branch"

	// BundleChunkSent is a NATS worker's: the first chunk of an item's
	// bundle published to the job's Object Store bucket, the next one not
	// yet. Not in All: only workers reach it (TestNATSGitWorkerCrash).
	BundleChunkSent = "bundle-chunk-sent"
)

// All lists the points.
var All = []string{
	JobWorktreeAdded, ItemStarted, ItemWorktreeAdded, ItemStepsDone, ItemWorktreeRemoved, ItemMerged,
	ResultWritten, DLQAdded, ItemLogged, DLQRemoved, ItemBranchDeleted, ItemWorktreesRemoved, JobWorktreeRemoved,
}

// Removal lists the points of runner jobs rm and prune.
var Removal = []string{JobBuried, RemovedWorktree, RemovedBranch}
