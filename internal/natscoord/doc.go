// Package natscoord sends a job's map items to NATS workers and takes
// their results (SPEC §11.4): New is the itemtask.Backend of `runner run
// --nats`, one process and one epoch at a time per job (its NATS lock).
// Its dispatcher publishes each task and waits for its result; on resume
// it adopts the tasks an ended process left in the stream and drains the
// results left for it; every 30 s it puts back a spec the server lost and
// sends again the tasks the stream lost or a worker dropped, and it makes
// the objects again when the server restarted on an empty store. The
// workers' beats tell it which worker runs each task, from which Watch
// shows the tasks of a lost worker waiting for redelivery. For items that
// run in git worktrees it stores each job branch tip a task names as
// bundles in the job's git bucket, and fetches each item's branch back
// from the bundle its result names, checked first (bundles.go).
package natscoord
