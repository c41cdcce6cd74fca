package natstest

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
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
	routes := make([]string, n)
	clusterPorts := make([]int, n)
	for i := range n {
		clusterPorts[i] = FreePort(t)
		routes[i] = "nats://127.0.0.1:" + strconv.Itoa(clusterPorts[i])
	}
	c := &Cluster{}
	for i := range n {
		opts := options(t.TempDir(), -1)
		opts.ServerName = "s" + strconv.Itoa(i+1)
		opts.Cluster = server.ClusterOpts{Name: "runnertest", Host: "127.0.0.1", Port: clusterPorts[i]}
		opts.Routes = server.RoutesFromStr(strings.Join(routes, ","))
		srv, err := server.NewServer(opts)
		if err != nil {
			t.Fatal(err)
		}
		srv.Start()
		s := &Server{srv: srv}
		t.Cleanup(s.Shutdown)
		if !srv.ReadyForConnections(10 * time.Second) {
			t.Fatalf("natstest: server %s did not start within 10s", opts.ServerName)
		}
		c.Servers = append(c.Servers, s)
	}
	if err := c.waitForLeader(30 * time.Second); err != nil {
		t.Fatal(err)
	}
	return c
}

// waitForLeader waits, at most within, until every server knows all the
// others and JetStream has a meta leader.
func (c *Cluster) waitForLeader(within time.Duration) error {
	for deadline := time.Now().Add(within); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if c.formed() {
			return nil
		}
	}
	return fmt.Errorf("natstest: the cluster of %d servers had no JetStream leader within %s", len(c.Servers), within)
}

func (c *Cluster) formed() bool {
	leaders := 0
	for _, s := range c.Servers {
		if s.srv.NumRoutes() < len(c.Servers)-1 || !s.srv.JetStreamIsCurrent() {
			return false
		}
		if s.srv.JetStreamIsLeader() {
			leaders++
		}
	}
	return leaders == 1
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
