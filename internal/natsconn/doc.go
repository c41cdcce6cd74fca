// Package natsconn is what a job's coordinator (natscoord) and its NATS
// workers (natsworker) share (SPEC §11): how to reach the server
// (Connection, Connect, ConnectWaiting, the nats CLI's selected context),
// the protocol (subjects, message ids, headers, the bodies of tasks,
// results, beats and job specs; Publish, Ack and Next, which survive a
// server that restarts; the remote Host's messages of a run on core NATS,
// ProgressTransport and ServeProgress) and the NATS objects either side makes when they
// are missing (the tasks and results streams, the jobs bucket and their
// consumers, Objects; a job's git bucket of bundles, GitStore).
package natsconn
