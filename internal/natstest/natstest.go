package natstest

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/runnerdev/runner/internal/testkit"
)

// Server is a JetStream server running in the test's process.
type Server struct {
	srv  *server.Server
	dir  string // its store
	port int
}

// Start starts a JetStream server on 127.0.0.1 with its store in a
// temporary directory; it is shut down when the test ends.
func Start(t testing.TB) *Server {
	t.Helper()
	return StartOn(t, -1)
}

// StartOn is Start on 127.0.0.1:port (-1: any free port): the server
// that a client started earlier waits for (see FreePort).
func StartOn(t testing.TB, port int) *Server {
	t.Helper()
	s, err := startIn(t.TempDir(), port)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Shutdown)
	return s
}

// StartIn starts a JetStream server on 127.0.0.1 with its store in dir,
// for callers without a testing.TB (a script's setup); Shutdown stops it.
func StartIn(dir string) (*Server, error) { return startIn(dir, -1) }

func startIn(dir string, port int) (*Server, error) {
	srv, err := server.NewServer(options(dir, port))
	if err != nil {
		return nil, err
	}
	srv.Start()
	if !srv.ReadyForConnections(testkit.Scale(10 * time.Second)) {
		srv.Shutdown()
		return nil, fmt.Errorf("natstest: the server did not start within %v", testkit.Scale(10*time.Second))
	}
	return &Server{srv: srv, dir: dir, port: srv.Addr().(*net.TCPAddr).Port}, nil
}

// Shutdown stops the server.
func (s *Server) Shutdown() { s.srv.Shutdown() }

// Restart starts a server stopped by Shutdown again, on its store and
// port. It is not safe to call with Shutdown or URL at once.
func (s *Server) Restart() error {
	s.srv.Shutdown()
	again, err := startIn(s.dir, s.port)
	if err != nil {
		return err
	}
	s.srv = again.srv
	return nil
}

// URL is where clients connect.
func (s *Server) URL() string { return s.srv.ClientURL() }

// Connect connects a client to the server, closed when the test ends.
func (s *Server) Connect(t testing.TB) *nats.Conn {
	t.Helper()
	return connect(t, s.URL())
}

func connect(t testing.TB, url string) *nats.Conn {
	nc, err := nats.Connect(url, nats.MaxReconnects(-1), nats.ReconnectWait(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return nc
}

func options(dir string, port int) *server.Options {
	return &server.Options{Host: "127.0.0.1", Port: port, JetStream: true, StoreDir: dir, NoLog: true, NoSigs: true}
}

// childEnv tells a re-executed test binary to be a server: DIR:PORT.
const childEnv = "RUNNER_NATSTEST_SERVER"

// ServeIfChild makes this process a NATS server when a test started it
// with Process: call it first in TestMain. It returns at once otherwise;
// as a server it never returns (it runs until it is killed).
func ServeIfChild() {
	spec, ok := os.LookupEnv(childEnv)
	if !ok {
		return
	}
	i := len(spec) - 1
	for i >= 0 && spec[i] != ':' {
		i--
	}
	port, err := strconv.Atoi(spec[i+1:])
	if i < 0 || err != nil {
		fmt.Fprintf(os.Stderr, "natstest: bad %s=%q\n", childEnv, spec)
		os.Exit(2)
	}
	opts := options(spec[:i], port)
	if c, ok := os.LookupEnv(clusterEnv); ok {
		clusterOptions(opts, c)
	}
	srv, err := server.NewServer(opts)
	if err != nil {
		fmt.Fprintln(os.Stderr, "natstest:", err)
		os.Exit(2)
	}
	srv.Start()
	srv.WaitForShutdown()
	os.Exit(0)
}

// Proc is a JetStream server in a process of its own (the test binary run
// again), on a fixed port and store so that it can be restarted.
type Proc struct {
	t       testing.TB
	dir     string
	store   string // the store's directory under dir
	port    int
	cluster string // its name and routes in a cluster (see clusterEnv); "": alone
	cmd     *exec.Cmd
}

// Process starts a server process with its store in dir on 127.0.0.1:port
// (0: a free port, kept across restarts). The package's TestMain must
// call ServeIfChild. The server is killed when the test ends.
func Process(t testing.TB, dir string, port int) *Proc {
	t.Helper()
	if port == 0 {
		port = FreePort(t)
	}
	return process(t, &Proc{t: t, dir: dir, store: "store", port: port})
}

func process(t testing.TB, p *Proc) *Proc {
	t.Helper()
	p.start()
	t.Cleanup(func() {
		if p.cmd != nil {
			p.Kill()
		}
	})
	return p
}

// URL is where clients connect.
func (p *Proc) URL() string { return "nats://127.0.0.1:" + strconv.Itoa(p.port) }

// Connect connects a client that reconnects for ever, closed when the
// test ends.
func (p *Proc) Connect(t testing.TB) *nats.Conn {
	t.Helper()
	return connect(t, p.URL())
}

// Kill kills the server with SIGKILL and waits for it to be gone.
func (p *Proc) Kill() {
	p.t.Helper()
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	_ = p.cmd.Wait()
	p.cmd = nil
}

// Restart starts the server again on its store and port.
func (p *Proc) Restart() {
	p.t.Helper()
	p.start()
}

// RestartEmpty starts the server again on its port with a new, empty
// store, as after its store directory was lost: no stream, consumer or
// bucket, no message and no duplicate window.
func (p *Proc) RestartEmpty() {
	p.t.Helper()
	p.store = "store-" + strconv.FormatInt(time.Now().UnixNano(), 10)
	p.start()
}

func (p *Proc) start() {
	p.t.Helper()
	log, err := os.OpenFile(filepath.Join(p.dir, "server.log"), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		p.t.Fatal(err)
	}
	defer log.Close()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+filepath.Join(p.dir, p.store)+":"+strconv.Itoa(p.port))
	if p.cluster != "" {
		cmd.Env = append(cmd.Env, clusterEnv+"="+p.cluster)
	}
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		p.t.Fatal(err)
	}
	p.cmd = cmd
	deadline := time.Now().Add(testkit.Scale(10 * time.Second))
	for {
		c, err := net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(p.port), 100*time.Millisecond)
		if err == nil {
			c.Close()
			return
		}
		if time.Now().After(deadline) {
			p.Kill()
			p.t.Fatalf("natstest: the server process did not listen on %d within %v (log: %s)", p.port, testkit.Scale(10*time.Second), log.Name())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// FreePort is a port of 127.0.0.1 nothing listens on now.
func FreePort(t testing.TB) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
