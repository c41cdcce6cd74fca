package cmd

import (
	"errors"
	"strings"
	"testing"

	"github.com/runnerdev/runner/internal/natsconn"
	"github.com/runnerdev/runner/workflow"
)

// A workflow whose items run in git worktrees is refused for NATS workers
// (which cannot make them) as a usage error, before any connection.
func TestConnectNATSRefusesWorktrees(t *testing.T) {
	src := "name: w\nmode: mapreduce\nmap:\n  input: seq 1 2\n  isolation: worktree\n  agent_template:\n    - shell: 'true'\n"
	wf, err := workflow.Parse("w.yml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	o := parallelOptions{NATS: natsOptions{Conn: natsconn.Connection{URL: "nats://127.0.0.1:1"}}}
	err = o.connectNATS(t.Context(), wf, nil)
	if !errors.As(err, new(usageError)) || !strings.Contains(err.Error(), "cannot run on NATS workers yet") || !strings.HasSuffix(err.Error(), ", or run without --nats") {
		t.Fatalf("connectNATS = %v, want the worktree refusal as a usage error", err)
	}
	if o.nats != nil {
		t.Error("connected anyway")
	}
}
