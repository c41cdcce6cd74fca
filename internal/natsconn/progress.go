package natsconn

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/runnerdev/runner/internal/itemtask/remote"
)

// ProgressSubject is where the workers running a job's tasks tell its
// coordinator how each run goes, on core NATS: runner.progress.J. Its
// messages are the remote Host's (remote.Msg, answered with a
// remote.Reply): events, output and slot releases are published; a run's
// start, its checkpoints and the taking back of its slot are requests.
func ProgressSubject(key string) string { return "runner.progress." + key }

// slotAskEvery is how long a run's request that may wait for one of the
// job's slots (remote.WaitsForSlot) waits before it asks again.
const slotAskEvery = 30 * time.Second

// ProgressTransport carries a run's messages to its job's coordinator
// (remote.Transport). Its requests are bounded, so that a coordinator
// that is gone or unreachable does not hold the run: a checkpoint waits
// CallDeadline, then goes on unheard; a start or an acquire is asked
// again every slotAskEvery while the coordinator waits for the slot.
type ProgressTransport struct {
	Conn *nats.Conn
	Key  string // the job's: runner.progress.Key
}

var _ remote.Transport = ProgressTransport{}

func (pt ProgressTransport) Publish(m remote.Msg) {
	if data, err := json.Marshal(m); err == nil {
		_ = pt.Conn.Publish(ProgressSubject(pt.Key), data)
	}
}

func (pt ProgressTransport) Request(ctx context.Context, m remote.Msg) (remote.Reply, error) {
	var reply remote.Reply
	data, err := json.Marshal(m)
	if err != nil {
		return reply, err
	}
	within := CallDeadline
	if remote.WaitsForSlot(m.Kind) {
		within = slotAskEvery
	}
	for {
		rctx, cancel := context.WithTimeout(ctx, within)
		msg, err := pt.Conn.RequestWithContext(rctx, ProgressSubject(pt.Key), data)
		silent := rctx.Err() != nil
		cancel()
		switch {
		case ctx.Err() != nil:
			return reply, context.Cause(ctx)
		case silent && remote.WaitsForSlot(m.Kind):
			continue // answered once the slot is held
		case silent:
			return reply, fmt.Errorf("%w in time", remote.ErrUnheard)
		case err != nil:
			return reply, fmt.Errorf("%w: %w", remote.ErrUnheard, err) // nats.ErrNoResponders: no coordinator listens
		case json.Unmarshal(msg.Data, &reply) != nil:
			return reply, remote.ErrUnheard
		}
		return reply, nil
	}
}

// ServeProgress hands receive the messages of the runs of the job of key,
// each with the function that answers it (nil for a published one), from
// the moment it returns: the server has the subscription before any run
// asks.
func ServeProgress(conn *nats.Conn, key string, receive func(remote.Msg, func(remote.Reply))) (*nats.Subscription, error) {
	sub, err := conn.Subscribe(ProgressSubject(key), func(msg *nats.Msg) {
		var m remote.Msg
		if json.Unmarshal(msg.Data, &m) != nil {
			return // not progress this runner can read: its run goes on unheard
		}
		var answer func(remote.Reply)
		if msg.Reply != "" {
			answer = func(r remote.Reply) {
				if data, err := json.Marshal(r); err == nil {
					_ = conn.Publish(msg.Reply, data)
				}
			}
		}
		receive(m, answer)
	})
	if err != nil {
		return nil, err
	}
	if err := conn.FlushTimeout(CallDeadline); err != nil {
		_ = sub.Unsubscribe()
		return nil, err
	}
	return sub, nil
}
