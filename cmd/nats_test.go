package cmd

import (
	"errors"
	"strings"
	"testing"

	"github.com/runnerdev/runner/internal/natsconn"
	"github.com/runnerdev/runner/workflow"
)

// A workflow whose items run in git worktrees goes to NATS workers (which
// run them in their clones): it is not refused, and the run connects.
func TestConnectNATSTakesWorktrees(t *testing.T) {
	src := "name: w\nmode: mapreduce\nmap:\n  input: seq 1 2\n  isolation: worktree\n  agent_template:\n    - shell: 'true'\n"
	wf, err := workflow.Parse("w.yml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	o := parallelOptions{NATS: natsOptions{Conn: natsconn.Connection{URL: "nats://127.0.0.1:1"}}}
	err = o.connectNATS(t.Context(), wf, nil)
	if err == nil || errors.As(err, new(usageError)) || !strings.Contains(err.Error(), "no servers available") {
		t.Fatalf("connectNATS = %v, want a connection to the server tried (none there)", err)
	}
}
