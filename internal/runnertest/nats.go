package runnertest

import (
	"os"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/runnerdev/runner/internal/natstest"
)

// NATSServer starts a JetStream server in the test's process for a
// script, its store in a directory of its own (not the script's, which
// some scripts search whole), and returns its URL and what stops it and
// removes its store.
func NATSServer() (url string, stop func(), err error) {
	store, err := os.MkdirTemp("", "runner-nats-")
	if err != nil {
		return "", nil, err
	}
	srv, err := natstest.StartIn(store)
	if err != nil {
		os.RemoveAll(store)
		return "", nil, err
	}
	return srv.URL(), func() { srv.Shutdown(); os.RemoveAll(store) }, nil
}

// natsServer (the script command natsserver) starts a JetStream server
// for the rest of the script and sets RUNNER_NATS to it: every run,
// resume, dlq retry and worker of the script uses it.
func natsServer(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 0 || neg {
		ts.Fatalf("usage: natsserver")
	}
	url, stop, err := NATSServer()
	ts.Check(err)
	ts.Defer(stop)
	ts.Setenv("RUNNER_NATS", url)
}
