package dist

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
)

// Connection says how to reach a NATS server, as the nats CLI does.
type Connection struct {
	URL      string // one URL or several, comma-separated
	Context  string // a nats CLI context: a name or a path to its JSON file
	Creds    string
	NKey     string
	User     string
	Password string
	TLSCert  string
	TLSKey   string
	TLSCA    string
}

// FromEnv returns c with every field still empty taken from the
// environment.
func (c Connection) FromEnv(getenv func(string) string, worker bool) Connection {
	fill := func(v *string, names ...string) {
		for _, n := range names {
			if *v == "" {
				*v = getenv(n)
			}
		}
	}
	urls := []string{"RUNNER_NATS"}
	if worker {
		urls = append(urls, "NATS_URL")
	}
	fill(&c.URL, urls...)
	fill(&c.Context, "NATS_CONTEXT")
	fill(&c.Creds, "NATS_CREDS")
	fill(&c.NKey, "NATS_NKEY")
	fill(&c.User, "NATS_USER")
	fill(&c.Password, "NATS_PASSWORD")
	fill(&c.TLSCert, "NATS_CERT")
	fill(&c.TLSKey, "NATS_KEY")
	fill(&c.TLSCA, "NATS_CA")
	return c
}

// Redacted is the URL(s) without userinfo.
func (c Connection) Redacted() string {
	parts := strings.Split(c.URL, ",")
	for i, p := range parts {
		if u, err := url.Parse(strings.TrimSpace(p)); err == nil && u.User != nil {
			u.User = nil
			parts[i] = u.String()
		}
	}
	return strings.Join(parts, ",")
}

// Connect connects to the server c names.
func Connect(ctx context.Context, c Connection, name string) (*nats.Conn, error) {
	opts := []nats.Option{nats.Name(name), nats.MaxReconnects(-1), nats.ReconnectWait(250 * time.Millisecond), nats.Timeout(5 * time.Second)}
	if c.User != "" {
		opts = append(opts, nats.UserInfo(c.User, c.Password))
	}
	nc, err := nats.Connect(c.URL, opts...)
	if err != nil {
		return nil, fmt.Errorf("NATS server %s: %w", c.Redacted(), err)
	}
	return nc, nil
}
