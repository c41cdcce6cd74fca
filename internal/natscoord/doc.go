// Package natscoord sends a job's map items to NATS workers and takes
// their results (SPEC §11.4): New is the itemtask.Backend of `runner run
// --nats`, one process and one epoch at a time per job (its NATS lock).
// Its dispatcher publishes each task and waits for its result, keeping
// one record per item out (items.go), which one pure function, reconcile,
// brings in line with what the server holds: on resume it adopts the
// tasks an ended process left in the stream and takes the results left
// for it; every 30 s it puts back a spec the server lost and sends again
// the tasks the stream lost or a worker dropped, and after the server
// restarted on an empty store it does so once the objects are made again. The
// workers' beats tell it which worker runs each task, from which Watch
// shows the tasks of a lost worker waiting for redelivery. For items that
// run in git worktrees it stores each job branch tip a task names as
// bundles in the job's git bucket, and fetches each item's branch back
// from the bundle its result names, checked first (bundles.go).
package natscoord
