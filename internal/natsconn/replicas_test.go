package natsconn

import (
	"strings"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/runnerdev/runner/internal/natstest"
)

// streamReplicas are the replicas of runner's three streams as the
// server has them.
func streamReplicas(t *testing.T, js jetstream.JetStream) []int {
	t.Helper()
	var got []int
	for _, name := range []string{TasksStream, ResultsStream, jobsStream} {
		s, err := js.Stream(t.Context(), name)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, s.CachedInfo().Config.Replicas)
	}
	return got
}

func openWith(t *testing.T, js jetstream.JetStream, replicas int) (*Objects, string) {
	t.Helper()
	var warn strings.Builder
	o, err := OpenObjects(t.Context(), js, &warn, replicas)
	if err != nil {
		t.Fatal(err)
	}
	return o, warn.String()
}

// A server alone gets one replica of each object.
func TestStandaloneServerGetsOneReplica(t *testing.T) {
	js, err := jetstream.New(natstest.Start(t).Connect(t))
	if err != nil {
		t.Fatal(err)
	}
	o, _ := openWith(t, js, 0)
	if n, text := o.Replication(); n != 1 || text != "R1" {
		t.Errorf("Replication() = %d, %q; want 1, R1", n, text)
	}
}

// On a cluster of 3 the objects get 3 replicas by default. One made with
// fewer stays so, with a warning, until replicas are asked for: then it
// is raised, and never lowered.
func TestClusterReplicas(t *testing.T) {
	c := natstest.StartCluster(t, 3)
	nc := c.Connect(t)
	if got := DefaultReplicas(nc); got != 3 {
		t.Fatalf("DefaultReplicas on a cluster of 3 = %d (servers %v)", got, nc.Servers())
	}
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	o, _ := openWith(t, js, 1)
	if n, text := o.Replication(); n != 1 || text != "R1" {
		t.Fatalf("asked 1: Replication() = %d, %q", n, text)
	}
	o, warn := openWith(t, js, 0)
	if n, _ := o.Replication(); n != 1 || !strings.Contains(warn, "RUNNER_TASKS has 1 replica(s), fewer than the 3") || strings.Contains(warn, "another config") {
		t.Errorf("default over R1 objects: replication %d, warnings:\n%s", n, warn)
	}
	o, warn = openWith(t, js, 3)
	if n, text := o.Replication(); n != 3 || text != "R3" || !strings.Contains(warn, "KV_RUNNER_JOBS: replicas raised from 1 to 3, as asked") {
		t.Errorf("asked 3: Replication() = %d, %q, notes:\n%s", n, text, warn)
	}
	if got := streamReplicas(t, js); got[0] != 3 || got[1] != 3 || got[2] != 3 {
		t.Errorf("the server has replicas %v, want 3 each", got)
	}
	if o, _ = openWith(t, js, 1); streamReplicas(t, js)[0] != 3 {
		t.Errorf("asking 1 lowered the replicas: %v", streamReplicas(t, js))
	}
}
