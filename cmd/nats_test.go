package cmd

import (
	"errors"
	"strings"
	"testing"

	"github.com/runnerdev/runner/internal/natsconn"
	"github.com/runnerdev/runner/internal/natstest"
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

// The streams' replicas come from --nats-replicas, else from the file's
// distributed.replicas, else are left to the server's size (0).
func TestConnectNATSTakesReplicas(t *testing.T) {
	srv := natstest.Start(t)
	for _, tc := range []struct {
		flag int
		file string
		want int
	}{
		{0, "", 0},
		{0, "distributed: {replicas: 2}\n", 2},
		{3, "distributed: {replicas: 2}\n", 3},
	} {
		src := "name: w\nmode: mapreduce\nmap:\n  input: seq 1 2\n  agent_template:\n    - shell: 'true'\n" + tc.file
		wf, err := workflow.Parse("w.yml", []byte(src))
		if err != nil {
			t.Fatal(err)
		}
		o := parallelOptions{NATS: natsOptions{Conn: natsconn.Connection{URL: srv.URL()}, Replicas: tc.flag}}
		if err := o.connectNATS(t.Context(), wf, nil); err != nil {
			t.Fatal(err)
		}
		if o.nats.replicas != tc.want {
			t.Errorf("flag %d, file %q: replicas %d, want %d", tc.flag, tc.file, o.nats.replicas, tc.want)
		}
		o.nats.close()
	}
}
