// Package remote is the Host of a job's items that run in another
// process (`runner agent` subprocesses, NATS workers), carried over a
// Transport: one codec (Msg, Reply), the run's side (Reporter: its
// start, checkpoints, events, slot releases and acquires, output) and the
// job's side (Tracker: each message checked against the dispatch that
// waits for its run and given to the itemtask.Host).
//
// A transport sends a Msg with Publish (no answer) or Request (a Reply
// comes back, or ErrUnheard: nobody answered in time). Agents use their
// stdin and stdout (agentproc), NATS workers core NATS request/reply on
// runner.progress.J (natsconn). A sketch of the run's side:
//
//	rp := remote.NewReporter(transport, remote.Run{Index: t.Index, Attempt: t.Attempt}, 0)
//	out, err := runner.Run(ctx, t, rp, func(rec itemtask.StepRecord) error { return rp.Save(ctx, rec) })
//
// and of the job's side, for each message that comes:
//
//	p := tracker.Track(ctx, t, nil)
//	defer tracker.Untrack(p)
//	tracker.Receive(msg, answer)
package remote
