package natstest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/runnerdev/runner/internal/testkit"
)

// Cluster is a JetStream cluster of servers running in the test's
// process, on 127.0.0.1, each with a store of its own.
type Cluster struct {
	Servers []*Server
}

// StartCluster starts a cluster of n servers and waits until JetStream
// has a leader in it; they are shut down when the test ends.
func StartCluster(t testing.TB, n int) *Cluster {
	t.Helper()
	members := clusterMembers(t, n)
	c := &Cluster{}
	for _, member := range members {
		opts := options(t.TempDir(), -1)
		clusterOptions(opts, member)
		srv, err := server.NewServer(opts)
		if err != nil {
			t.Fatal(err)
		}
		srv.Start()
		s := &Server{srv: srv}
		t.Cleanup(s.Shutdown)
		if !srv.ReadyForConnections(testkit.Scale(10 * time.Second)) {
			t.Fatalf("natstest: server %s did not start within %v", opts.ServerName, testkit.Scale(10*time.Second))
		}
		c.Servers = append(c.Servers, s)
	}
	if err := c.waitForLeader(testkit.Scale(30 * time.Second)); err != nil {
		t.Fatal(err)
	}
	return c
}

// clusterEnv tells a server process its place in a cluster:
// NAME;CLUSTER_PORT;ROUTES (ROUTES comma-separated).
const clusterEnv = "RUNNER_NATSTEST_CLUSTER"

// clusterMembers are the places of n servers in a cluster on 127.0.0.1,
// as clusterEnv spells them: named s1..sn, each routing to all.
func clusterMembers(t testing.TB, n int) []string {
	ports := make([]int, n)
	routes := make([]string, n)
	for i := range n {
		ports[i] = FreePort(t)
		routes[i] = "nats://127.0.0.1:" + strconv.Itoa(ports[i])
	}
	members := make([]string, n)
	for i := range n {
		members[i] = fmt.Sprintf("s%d;%d;%s", i+1, ports[i], strings.Join(routes, ","))
	}
	return members
}

// clusterOptions makes opts those of the cluster member spec names.
func clusterOptions(opts *server.Options, member string) {
	f := strings.SplitN(member, ";", 3)
	if len(f) != 3 {
		return
	}
	port, _ := strconv.Atoi(f[1])
	opts.ServerName = f[0]
	opts.Cluster = server.ClusterOpts{Name: "runnertest", Host: "127.0.0.1", Port: port}
	opts.Routes = server.RoutesFromStr(f[2])
}

// waitForLeader waits, at most within, until JetStream has a leader that
// counts every server a peer, and every server tells its clients of all
// the others (as runner counts the servers of a cluster).
func (c *Cluster) waitForLeader(within time.Duration) error {
	for deadline := time.Now().Add(within); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if c.formed() {
			return nil
		}
	}
	return fmt.Errorf("natstest: the cluster of %d servers had no JetStream leader with them all as peers within %s", len(c.Servers), within)
}

func (c *Cluster) formed() bool {
	leaders := 0
	for _, s := range c.Servers {
		if s.srv.JetStreamIsLeader() && len(s.srv.JetStreamClusterPeers()) == len(c.Servers) {
			leaders++
		}
		if !s.announcesAll(len(c.Servers)) {
			return false
		}
	}
	return leaders == 1
}

// announcesAll reports whether a client of s learns of n servers.
func (s *Server) announcesAll(n int) bool {
	nc, err := nats.Connect(s.URL(), nats.NoReconnect())
	if err != nil {
		return false
	}
	defer nc.Close()
	return len(nc.Servers()) >= n
}

// URL is where clients connect: every server's URL, comma-separated.
func (c *Cluster) URL() string {
	urls := make([]string, len(c.Servers))
	for i, s := range c.Servers {
		urls[i] = s.URL()
	}
	return strings.Join(urls, ",")
}

// Connect connects a client to the first server, closed when the test
// ends; it learns the others from it, and reconnects to one of them for
// ever when its server goes.
func (c *Cluster) Connect(t testing.TB) *nats.Conn {
	t.Helper()
	return connect(t, c.Servers[0].URL())
}

// StreamLeader is the server that leads stream of the default account;
// nil when none does now.
func (c *Cluster) StreamLeader(stream string) *Server {
	for _, s := range c.Servers {
		if s.srv.Running() && s.srv.JetStreamIsStreamLeader(server.DEFAULT_GLOBAL_ACCOUNT, stream) {
			return s
		}
	}
	return nil
}

// ProcCluster is a JetStream cluster of server processes (see Proc), on
// 127.0.0.1, that a test can kill -9 and restart one by one.
type ProcCluster struct {
	Procs []*Proc
}

// ProcessCluster starts a cluster of n server processes, each with its
// store under dir, and waits (at most 90 s: one round in 20 of
// TestNATSClusterLeaderKilled saw a new cluster of 3 still answer
// "JetStream system temporarily unavailable" after 30 s on 2 cores) until
// JetStream can place a stream of n replicas in it. The package's TestMain must call
// ServeIfChild.
func ProcessCluster(t testing.TB, dir string, n int) *ProcCluster {
	t.Helper()
	c := &ProcCluster{}
	for i, member := range clusterMembers(t, n) {
		d := filepath.Join(dir, "s"+strconv.Itoa(i+1))
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		c.Procs = append(c.Procs, process(t, &Proc{t: t, dir: d, store: "store", port: FreePort(t), cluster: member}))
	}
	nc := connect(t, c.URL())
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(testkit.Scale(90 * time.Second)); ; time.Sleep(100 * time.Millisecond) {
		err := placeable(t.Context(), js, n)
		if err == nil {
			return c
		}
		if time.Now().After(deadline) {
			t.Fatalf("natstest: the cluster of %d processes could not place a stream of %d replicas within %v: %v", n, n, testkit.Scale(90*time.Second), err)
		}
	}
}

// placeable makes and deletes a stream of n replicas: it fails until
// JetStream has a leader and n peers.
func placeable(ctx context.Context, js jetstream.JetStream, n int) error {
	ctx, cancel := context.WithTimeout(ctx, testkit.Scale(2*time.Second))
	defer cancel()
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "NATSTEST_READY", Subjects: []string{"natstest.ready"}, Replicas: n}); err != nil {
		return err
	}
	return js.DeleteStream(ctx, "NATSTEST_READY")
}

// URL is every server's URL, comma-separated.
func (c *ProcCluster) URL() string {
	urls := make([]string, len(c.Procs))
	for i, p := range c.Procs {
		urls[i] = p.URL()
	}
	return strings.Join(urls, ",")
}

// StreamLeader is the server process that leads stream now, as the
// cluster tells a client.
func (c *ProcCluster) StreamLeader(t testing.TB, stream string) *Proc {
	t.Helper()
	nc := connect(t, c.URL())
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), testkit.Scale(5*time.Second))
	defer cancel()
	s, err := js.Stream(ctx, stream)
	if err != nil {
		t.Fatal(err)
	}
	leader := s.CachedInfo().Cluster.Leader
	for i, p := range c.Procs {
		if leader == "s"+strconv.Itoa(i+1) {
			return p
		}
	}
	t.Fatalf("natstest: stream %s's leader is %q, none of the cluster's", stream, leader)
	return nil
}
