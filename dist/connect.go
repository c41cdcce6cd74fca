package dist

import (
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/synadia-io/orbit.go/natscontext"
)

// Connection says how to reach a NATS server, as the nats CLI does: the
// flags, then the environment, then a nats CLI context.
type Connection struct {
	URL      string // one URL or several, comma-separated
	Context  string // a nats CLI context: a name, or the path of its JSON file
	Creds    string // credentials file
	NKey     string // NKey seed file
	User     string
	Password string
	TLSCert  string
	TLSKey   string
	TLSCA    string
}

// FromEnv returns c with each field still empty taken from the
// environment as the nats CLI names it; the URL from RUNNER_NATS, and for
// a worker then NATS_URL (a stray NATS_URL never sends a run's items
// away).
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

// Redacted is the URL (each of them) without user information: what job
// metadata and messages may show.
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

// where names the server c reaches, for messages.
func (c Connection) where() string {
	switch {
	case c.URL != "" && c.Context != "":
		return c.Redacted() + " (context " + c.Context + ")"
	case c.URL != "":
		return c.Redacted()
	}
	return "context " + c.Context
}

// Connect connects to the server c names, reconnecting for ever once
// connected; name is the connection's name on the server. The context, if
// any, gives what c leaves empty: its URL, and its credentials unless c
// has some.
func Connect(c Connection, name string) (*nats.Conn, error) {
	opts := []nats.Option{nats.Name(name), nats.MaxReconnects(-1), nats.ReconnectWait(250 * time.Millisecond), nats.Timeout(5 * time.Second)}
	auth, err := c.auth()
	if err != nil {
		return nil, fmt.Errorf("NATS %s: %w", c.where(), err)
	}
	if len(auth) > 0 {
		opts = append(append(opts, forgetContextAuth), auth...)
	}
	if c.TLSCA != "" {
		opts = append(opts, nats.RootCAs(c.TLSCA))
	}
	var nc *nats.Conn
	if c.Context != "" {
		if c.URL != "" {
			opts = append(opts, servers(c.URL))
		}
		nc, _, err = natscontext.Connect(c.Context, opts...)
	} else {
		nc, err = nats.Connect(c.URL, opts...)
	}
	if err != nil {
		return nil, fmt.Errorf("NATS %s: %w", c.where(), err)
	}
	return nc, nil
}

// auth is the credentials c gives: a creds file, an NKey seed, a user and
// password; a client certificate.
func (c Connection) auth() ([]nats.Option, error) {
	var opts []nats.Option
	switch {
	case c.Creds != "":
		opts = append(opts, nats.UserCredentials(c.Creds))
	case c.NKey != "":
		o, err := nats.NkeyOptionFromSeed(c.NKey)
		if err != nil {
			return nil, err
		}
		opts = append(opts, o)
	case c.User != "":
		opts = append(opts, nats.UserInfo(c.User, c.Password))
	}
	if c.TLSCert != "" || c.TLSKey != "" {
		opts = append(opts, nats.ClientCert(c.TLSCert, c.TLSKey))
	}
	return opts, nil
}

// forgetContextAuth drops the credentials a context set, before the ones
// given by flag or environment, which win.
func forgetContextAuth(o *nats.Options) error {
	o.User, o.Password, o.Token = "", "", ""
	o.UserJWT, o.SignatureCB, o.Nkey = nil, nil, ""
	return nil
}

// servers makes the comma-separated urls the servers to connect to, over
// a context's URL.
func servers(urls string) nats.Option {
	return func(o *nats.Options) error {
		o.Url, o.Servers = "", nil
		for _, u := range strings.Split(urls, ",") {
			o.Servers = append(o.Servers, strings.TrimSpace(u))
		}
		return nil
	}
}
