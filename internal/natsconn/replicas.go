package natsconn

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// DefaultReplicas is how many replicas runner gives its streams and bucket
// when none is asked for: 3 when the server nc is connected to is in a
// cluster of 3 servers or more (as the client URLs it announces count
// them), else 1.
func DefaultReplicas(nc *nats.Conn) int {
	if nc.ConnectedClusterName() != "" && len(nc.Servers()) >= 3 {
		return 3
	}
	return 1
}

// create makes the object whose stream is name through makeIt, with the
// replicas o wants: with 1 when the default asks for more than the
// cluster can place now (a warning says so); and when it exists (makeIt
// fails with exists), it opens it as it is, warning when its config
// differs in more than replicas, and raises its replicas if they were
// asked for (see replicate).
func (o *Objects) create(ctx context.Context, name string, makeIt func(replicas int) error, exists error) error {
	want := o.want
	err := makeIt(want)
	if err != nil && o.asked == 0 && want > 1 && unplaceable(err) {
		o.Warnf("NATS stream %s: the cluster cannot place %d replicas now (%v); runner makes it with 1", name, want, err)
		want = 1
		err = makeIt(want)
	}
	switch {
	case errors.Is(err, exists):
		return o.existing(ctx, name, makeIt, exists)
	case err != nil:
		return err
	}
	o.record(name, want)
	return nil
}

// existing opens the object of stream name that exists with another
// config than makeIt gives it.
func (o *Objects) existing(ctx context.Context, name string, makeIt func(replicas int) error, exists error) error {
	s, err := o.js.Stream(ctx, name)
	if err != nil {
		return err
	}
	have := s.CachedInfo().Config.Replicas
	if err := makeIt(have); errors.Is(err, exists) {
		o.Warnf("NATS stream %s exists with another config; runner uses it as it is", name)
	} else if err != nil {
		return err
	}
	return o.replicate(ctx, s)
}

// replicate raises the replicas of stream s to those asked for
// explicitly; with the default, it warns that s has fewer. Replicas are
// never lowered: another job may want them.
func (o *Objects) replicate(ctx context.Context, s jetstream.Stream) error {
	cfg := s.CachedInfo().Config
	have := cfg.Replicas
	switch {
	case have >= o.want:
		o.record(cfg.Name, have)
		return nil
	case o.asked == 0:
		o.Warnf("NATS stream %s has %d replica(s), fewer than the %d runner gives it on this cluster; runner uses it as it is (--nats-replicas %d or distributed.replicas: %d raises it)",
			cfg.Name, have, o.want, o.want, o.want)
		o.record(cfg.Name, have)
		return nil
	}
	cfg.Replicas = o.want
	if _, err := o.js.UpdateStream(ctx, cfg); err != nil {
		return fmt.Errorf("raising its replicas from %d to %d: %w", have, o.want, err)
	}
	o.Notef("NATS stream %s: replicas raised from %d to %d, as asked", cfg.Name, have, o.want)
	o.record(cfg.Name, o.want)
	return nil
}

// unplaceable reports whether err says that the cluster has too few
// servers (up) for the replicas asked for.
func unplaceable(err error) bool {
	var apiErr *jetstream.APIError
	return errors.As(err, &apiErr) && (apiErr.ErrorCode == jsErrNoPeers || apiErr.ErrorCode == jsErrInsufficientResources)
}

// The server's error codes for replicas it cannot place.
const (
	jsErrNoPeers               jetstream.ErrorCode = 10005 // no suitable peers for placement
	jsErrInsufficientResources jetstream.ErrorCode = 10023
)

func (o *Objects) record(stream string, replicas int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.have[stream] = replicas
}

// Replication is how the objects o opened are replicated: the fewest
// replicas among them (the job's streams are as available as the least
// replicated), and in words: "R3", or each object's when they differ
// ("RUNNER_TASKS R3, RUNNER_RESULTS R3, KV_RUNNER_JOBS R1").
func (o *Objects) Replication() (fewest int, text string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	var each []string
	same := true
	for _, name := range []string{TasksStream, ResultsStream, jobsStream} {
		n, ok := o.have[name]
		if !ok {
			continue
		}
		if fewest > 0 && n != fewest {
			same = false
		}
		if fewest == 0 || n < fewest {
			fewest = n
		}
		each = append(each, fmt.Sprintf("%s R%d", name, n))
	}
	if same {
		return fewest, fmt.Sprintf("R%d", fewest)
	}
	return fewest, strings.Join(each, ", ")
}
