package natscoord

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/runnerdev/runner/internal/eventlog"
	"github.com/runnerdev/runner/internal/itemtask"
	"github.com/runnerdev/runner/internal/natsconn"
)

// resultMsg is a result message as the results consumer delivers it.
type resultMsg struct {
	jetstream.Msg
	data  []byte
	seq   uint64 // its place in the stream
	acked bool
}

func (m *resultMsg) Data() []byte { return m.data }
func (m *resultMsg) Headers() nats.Header {
	return nats.Header{natsconn.HeaderProto: []string{natsconn.Proto}}
}
func (m *resultMsg) Metadata() (*jetstream.MsgMetadata, error) {
	return &jetstream.MsgMetadata{Sequence: jetstream.SequencePair{Stream: m.seq}}, nil
}
func (m *resultMsg) DoubleAck(context.Context) error { m.acked = true; return nil }

// jobEvents is a host that keeps the job's events.
type jobEvents struct {
	itemtask.Host
	events []eventlog.Event
}

func (h *jobEvents) JobEvent(e eventlog.Event) { h.events = append(h.events, e) }

// A result of an earlier epoch with the attempt number a dispatch waits
// for (a dlq retry numbers attempts from 1 again; the first run's result
// came back unacknowledged) is dropped as a duplicate, unless the
// dispatch adopted the earlier process's task; one of this epoch is taken.
func TestEarlierEpochsResultIsNotThisAttempts(t *testing.T) {
	for _, tc := range []struct {
		name       string
		epoch      int
		adopted    bool
		taken      bool
		duplicates int
	}{
		{"earlier epoch", 1, false, false, 1},
		{"earlier epoch, adopted task", 1, true, true, 0},
		{"this epoch", 2, false, true, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := &jobEvents{}
			d := &Dispatcher{epoch: 2, host: h, items: map[int]*record{}, acks: newAcks()}
			r := d.newRecord(0, 1, "a", published)
			r.ended = tc.adopted
			data, err := json.Marshal(natsconn.Result{Index: 0, Attempt: 1, Epoch: tc.epoch, Worker: "w", Delivery: 1, Failed: true})
			if err != nil {
				t.Fatal(err)
			}
			msg := &resultMsg{data: data}
			d.receive(msg)
			d.acks.close() // its acknowledgement, if any, is sent
			if taken := r.phase == resulted; taken != tc.taken || len(h.events) != tc.duplicates || msg.acked != !tc.taken {
				t.Errorf("taken %v, events %v, acknowledged %v; want taken %v, %d result_duplicate", taken, h.events, msg.acked, tc.taken, tc.duplicates)
			}
		})
	}
}

// A result read from the stream (its delivery lost, or delivered to an
// ended process) is acknowledged through its delivery when that comes:
// not dropped as a duplicate, and acknowledged once the engine recorded
// the outcome.
func TestDeliveryOfAResultReadFromTheStreamIsAcknowledgedOnceRecorded(t *testing.T) {
	h := &jobEvents{}
	d := &Dispatcher{epoch: 1, host: h, items: map[int]*record{}, acks: newAcks()}
	res := natsconn.Result{Index: 0, Attempt: 1, Epoch: 1, Worker: "w", Delivery: 1}
	d.mu.Lock()
	r := d.newRecord(0, 1, "a", published)
	r.task = itemtask.Task{Index: 0, ItemID: "a", Attempt: 1, DispatchID: "a.1"}
	d.take(r, inbound{r: res, seq: 9})
	data, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	msg := &resultMsg{data: data, seq: 9}
	d.receive(msg)
	d.mu.Lock()
	r.phase = recording // its outcome is the engine's
	d.mu.Unlock()
	if len(h.events) != 0 {
		t.Errorf("events %v, want none: the delivery is the result's, not a duplicate", h.events)
	}
	d.Recorded(t.Context(), "a.1")
	d.acks.close()
	if !msg.acked {
		t.Error("the delivery was not acknowledged once the outcome was recorded")
	}
}
