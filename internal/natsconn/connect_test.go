package natsconn

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/runnerdev/runner/internal/natstest"
	"github.com/runnerdev/runner/internal/testkit"
)

// The flag wins over the environment; NATS_URL reaches only a worker.
func TestConnectionFromEnv(t *testing.T) {
	env := map[string]string{"RUNNER_NATS": "nats://runner:4222", "NATS_URL": "nats://stray:4222", "NATS_USER": "u", "NATS_CONTEXT": "prod"}
	getenv := func(k string) string { return env[k] }
	got := Connection{URL: "nats://flag:4222"}.FromEnv(getenv, false)
	if got.URL != "nats://flag:4222" || got.User != "u" || got.Context != "prod" {
		t.Errorf("flag and env: %+v", got)
	}
	delete(env, "RUNNER_NATS")
	if got := (Connection{}).FromEnv(getenv, false); got.URL != "" {
		t.Errorf("a run took NATS_URL: %+v", got)
	}
	if got := (Connection{}).FromEnv(getenv, true); got.URL != "nats://stray:4222" {
		t.Errorf("a worker did not take NATS_URL: %+v", got)
	}
}

func TestRedacted(t *testing.T) {
	c := Connection{URL: "nats://u:p@h:4222,nats://h2:4222"}
	if got := c.Redacted(); got != "nats://h:4222,nats://h2:4222" {
		t.Errorf("Redacted = %q", got)
	}
}

// A nats CLI context (here by path) gives the URL; a URL given by flag or
// environment goes over it.
func TestConnectWithContext(t *testing.T) {
	t.Parallel()
	srv := natstest.Start(t)
	dir := t.TempDir()
	good, bad := filepath.Join(dir, "good.json"), filepath.Join(dir, "bad.json")
	os.WriteFile(good, []byte(`{"url": "`+srv.URL()+`"}`), 0o600)
	os.WriteFile(bad, []byte(`{"url": "nats://127.0.0.1:1"}`), 0o600)
	for _, c := range []Connection{{Context: good}, {Context: bad, URL: srv.URL()}} {
		nc, err := Connect(t.Context(), c, "test")
		if err != nil {
			t.Errorf("%+v: %v", c, err)
			continue
		}
		if !nc.IsConnected() {
			t.Errorf("%+v: not connected", c)
		}
		nc.Close()
	}
}

// A server that cannot be reached is named in the error, without the
// password of its URL.
func TestConnectErrorHidesThePassword(t *testing.T) {
	_, err := Connect(t.Context(), Connection{URL: "nats://u:hunter2@127.0.0.1:1"}, "test")
	if err == nil || !strings.Contains(err.Error(), "nats://127.0.0.1:1") || strings.Contains(err.Error(), "hunter2") {
		t.Errorf("err = %v", err)
	}
}

// The nats CLI's selected context is the file its context.txt names,
// under XDG_CONFIG_HOME, else HOME/.config; none without context.txt.
func TestSelectedContext(t *testing.T) {
	xdg, home := t.TempDir(), t.TempDir()
	env := map[string]string{"XDG_CONFIG_HOME": xdg, "HOME": home}
	getenv := func(k string) string { return env[k] }
	if got := SelectedContext(getenv); got != "" {
		t.Errorf("nothing selected: %q", got)
	}
	os.MkdirAll(filepath.Join(xdg, "nats"), 0o700)
	os.WriteFile(filepath.Join(xdg, "nats", "context.txt"), []byte("prod\n"), 0o600)
	if got, want := SelectedContext(getenv), filepath.Join(xdg, "nats", "context", "prod.json"); got != want {
		t.Errorf("XDG_CONFIG_HOME: %q, want %q", got, want)
	}
	delete(env, "XDG_CONFIG_HOME")
	os.MkdirAll(filepath.Join(home, ".config", "nats"), 0o700)
	os.WriteFile(filepath.Join(home, ".config", "nats", "context.txt"), []byte("dev"), 0o600)
	if got, want := SelectedContext(getenv), filepath.Join(home, ".config", "nats", "context", "dev.json"); got != want {
		t.Errorf("HOME: %q, want %q", got, want)
	}
}

// A client started before its server connects once the server is up,
// after saying it waits (once: the next line would come 30 s later).
func TestConnectWaitingForTheServer(t *testing.T) {
	t.Parallel()
	port := natstest.FreePort(t)
	var mu sync.Mutex
	var lines []string
	logf := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		lines = append(lines, fmt.Sprintf(format, args...))
	}
	type made struct {
		nc  *nats.Conn
		err error
	}
	done := make(chan made, 1)
	go func() {
		nc, err := ConnectWaiting(context.Background(), Connection{URL: fmt.Sprintf("nats://127.0.0.1:%d", port)}, "test", logf)
		done <- made{nc, err}
	}()
	// The server comes up once the first attempt failed and said so.
	testkit.Eventually(t, func() bool { mu.Lock(); defer mu.Unlock(); return len(lines) > 0 }, "the first attempt's line")
	natstest.StartOn(t, port)
	select {
	case m := <-done:
		if m.err != nil {
			t.Fatal(m.err)
		}
		m.nc.Close()
	case <-time.After(testkit.Scale(20 * time.Second)):
		t.Fatal("not connected 20 s after the server came up")
	}
	mu.Lock()
	defer mu.Unlock()
	if len(lines) != 2 || !strings.Contains(lines[0], "no servers available") || !strings.Contains(lines[0], "trying again (attempt 1,") || !strings.Contains(lines[1], "connected to NATS") {
		t.Errorf("log:\n%s", strings.Join(lines, "\n"))
	}
}

// Waiting ends at once with ctx; an error other than an unreachable
// server (here an unknown context file) ends it at the first attempt.
func TestConnectWaitingStops(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancelCause(context.Background())
	stop := errors.New("stopped")
	go func() { time.Sleep(300 * time.Millisecond); cancel(stop) }()
	quiet := func(string, ...any) {}
	if _, err := ConnectWaiting(ctx, Connection{URL: "nats://127.0.0.1:1"}, "test", quiet); err != stop {
		t.Errorf("cancelled: %v", err)
	}
	missing := filepath.Join(t.TempDir(), "missing.json")
	if _, err := ConnectWaiting(context.Background(), Connection{Context: missing}, "test", quiet); err == nil || !strings.Contains(err.Error(), "missing.json") {
		t.Errorf("unknown context: %v", err)
	}
}

// An interrupt while the server has not answered yet (it accepted the
// connection and says nothing) ends Connect with the interrupt's cause.
func TestConnectEndsWithCtx(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	ctx, cancel := context.WithCancelCause(t.Context())
	interrupt := errors.New("interrupt")
	go func() {
		if c, err := ln.Accept(); err == nil {
			cancel(interrupt) // the client waits for the server's INFO now
			defer c.Close()
			io.Copy(io.Discard, c)
		}
	}()
	if _, err := Connect(ctx, Connection{URL: "nats://" + ln.Addr().String()}, "test"); !errors.Is(err, interrupt) {
		t.Errorf("Connect = %v, want the interrupt", err)
	}
}
