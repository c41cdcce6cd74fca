package dist

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/runnerdev/runner/natstest"
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
		nc, err := Connect(c, "test")
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
	_, err := Connect(Connection{URL: "nats://u:hunter2@127.0.0.1:1"}, "test")
	if err == nil || !strings.Contains(err.Error(), "nats://127.0.0.1:1") || strings.Contains(err.Error(), "hunter2") {
		t.Errorf("err = %v", err)
	}
}
