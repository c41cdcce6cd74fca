// Package itemrun runs an item's attempt in this process: the Runner of a
// job's agent template (its steps through the executor, each saved as a
// checkpoint before the next starts, the job's slot given back while a
// step waits out a delay, agent_timeout, the item's git worktree) for the
// job itself (Local, the dispatcher of its own process), for a `runner
// agent` process (which opens the job with OpenStored) and for a NATS
// worker (OpenPortable). Each attempt's output goes to the item's log
// after a header line (attemptlog.Header) naming the attempt and the run.
package itemrun
