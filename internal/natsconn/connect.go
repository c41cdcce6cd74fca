package natsconn

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
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

// Where names the server c reaches, for messages.
func (c Connection) Where() string {
	switch {
	case c.URL != "" && c.Context != "":
		return c.Redacted() + " (context " + c.Context + ")"
	case c.URL != "":
		return c.Redacted()
	}
	return "context " + c.Context
}

// dial connects to the server c names, reconnecting for ever once
// connected; name is the connection's name on the server. The context, if
// any, gives what c leaves empty: its URL, and its credentials unless c
// has some.
func dial(c Connection, name string) (*nats.Conn, error) {
	opts := []nats.Option{nats.Name(name), nats.MaxReconnects(-1), nats.ReconnectWait(250 * time.Millisecond), nats.Timeout(5 * time.Second)}
	auth, err := c.auth()
	if err != nil {
		return nil, fmt.Errorf("NATS %s: %w", c.Where(), err)
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
		return nil, fmt.Errorf("NATS %s: %w", c.Where(), err)
	}
	return nc, nil
}

// How ConnectWaiting waits for a server that is not up: the first retry
// after firstRetry, each next one twice as late up to maxRetry; a line on
// the log at most every retryNote.
const (
	firstRetry = 250 * time.Millisecond
	maxRetry   = 5 * time.Second
	retryNote  = 30 * time.Second
)

// ConnectWaiting is Connect for a service that may start before its
// server: while the server cannot be reached it tries again, with a
// capped backoff, and says so with logf at most every 30 s, until ctx
// ends (it returns ctx's cause at once). Any other error (an unknown
// context, a bad credentials file, credentials refused) is returned at
// once.
func ConnectWaiting(ctx context.Context, c Connection, name string, logf func(format string, args ...any)) (*nats.Conn, error) {
	wait := firstRetry
	var noted time.Time
	for attempt := 1; ; attempt++ {
		nc, err := Connect(ctx, c, name)
		switch {
		case err == nil && attempt > 1:
			logf("connected to NATS %s at attempt %d", c.Where(), attempt)
			return nc, nil
		case err == nil || !unreachable(err):
			return nc, err
		case time.Since(noted) >= retryNote:
			logf("%v; trying again (attempt %d, then every %s at most) until it is up", err, attempt, maxRetry)
			noted = time.Now()
		}
		if !sleep(ctx, wait) {
			return nil, context.Cause(ctx)
		}
		wait = min(2*wait, maxRetry)
	}
}

// Connect connects to the server c names (see dial), giving up (its
// connection closed once made) when ctx ends first: a server that does
// not answer takes seconds, which an interrupt cuts short.
func Connect(ctx context.Context, c Connection, name string) (*nats.Conn, error) {
	type attempt struct {
		nc  *nats.Conn
		err error
	}
	made := make(chan attempt, 1)
	go func() {
		nc, err := dial(c, name)
		made <- attempt{nc, err}
	}()
	select {
	case a := <-made:
		return a.nc, a.err
	case <-ctx.Done():
		go func() {
			if a := <-made; a.nc != nil {
				a.nc.Close()
			}
		}()
		return nil, context.Cause(ctx)
	}
}

// unreachable reports whether err says that no server answered (not up
// yet, or not reachable yet), rather than that one refused the client.
func unreachable(err error) bool {
	var netErr net.Error
	return errors.Is(err, nats.ErrNoServers) || errors.Is(err, nats.ErrTimeout) ||
		(errors.As(err, &netErr) && netErr.Timeout())
}

// SelectedContext is the JSON file of the nats CLI's selected context, as
// `nats context select` records it: the name in
// $XDG_CONFIG_HOME/nats/context.txt ($HOME/.config by default), its file
// nats/context/NAME.json there; "" when none is selected.
func SelectedContext(getenv func(string) string) string {
	config := getenv("XDG_CONFIG_HOME")
	if config == "" {
		home := getenv("HOME")
		if home == "" {
			return ""
		}
		config = filepath.Join(home, ".config")
	}
	data, err := os.ReadFile(filepath.Join(config, "nats", "context.txt"))
	name := strings.TrimSpace(string(data))
	if err != nil || name == "" {
		return ""
	}
	return filepath.Join(config, "nats", "context", name+".json")
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
