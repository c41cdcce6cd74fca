// Package natsworker is `runner worker` (SPEC §11.2): a Worker pulls the
// task messages of one queue, each a batch of items (batch.go), opens each
// job from the spec its coordinator put in the jobs bucket
// (WorkerOptions.Open, the engine's), runs the items of a batch at once,
// heartbeats while they run, announces them to the coordinator (beats),
// reports each run as it goes (a remote.Reporter) and sends back their
// results, logging a line per task and periodic
// summaries; it drains on a signal and exits when idle. Its watchdog
// process (ServeWatchdog) kills the process groups of a frozen or dead
// worker's items when their leases run out, and its store directory
// (NewStore) is removed by the next worker when it was killed. An item
// that runs in a git worktree gets its task's tip fetched into the
// worker's clone first, and its branch sent back as a bundle (tree.go).
package natsworker
