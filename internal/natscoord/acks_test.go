package natscoord

import (
	"context"
	"fmt"
	"io"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/runnerdev/runner/internal/natsconn"
	"github.com/runnerdev/runner/internal/state"
)

// ackedMsg is a result's message that records how it was acknowledged;
// its DoubleAck waits for release when that is not nil.
type ackedMsg struct {
	jetstream.Msg
	name    string
	log     *ackLog
	release chan struct{}
}

type ackLog struct {
	mu  sync.Mutex
	got []string
}

func (l *ackLog) add(s string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.got = append(l.got, s)
}

func (m *ackedMsg) Ack() error { m.log.add("ack " + m.name); return nil }

func (m *ackedMsg) DoubleAck(ctx context.Context) error {
	if m.release != nil {
		<-m.release
	}
	m.log.add("confirmed " + m.name)
	return nil
}

// Results handed over to be acknowledged do not wait for the server:
// those handed over while a confirmation is awaited go out together, the
// last one confirmed, and close waits for that confirmation.
func TestAcksConfirmEachBatchByItsLast(t *testing.T) {
	log := &ackLog{}
	first := &ackedMsg{name: "1", log: log, release: make(chan struct{})}
	a := newAcks()
	a.add(first)
	a.add(&ackedMsg{name: "2", log: log})
	a.add(&ackedMsg{name: "3", log: log})
	close(first.release)
	a.close()
	// The goroutine may take the first message alone or with the others.
	alone := []string{"confirmed 1", "ack 2", "confirmed 3"}
	together := []string{"ack 1", "ack 2", "confirmed 3"}
	if !slices.Equal(log.got, alone) && !slices.Equal(log.got, together) {
		t.Errorf("acknowledgements: %q, want %q or %q", log.got, alone, together)
	}
}

// A job's results leave the results stream when it ends: the
// acknowledgements the coordinator sends without waiting are confirmed
// before Close deletes the job's consumer (a work-queue stream keeps the
// messages a deleted consumer did not acknowledge).
func TestJobLeavesNoResults(t *testing.T) {
	srv, _, objs := serve(t)
	dir := t.TempDir()
	t.Chdir(dir)
	const items = 20
	j := startJob(t, dir, fmt.Sprintf("mode: mapreduce\nmap:\n  input: seq 1 %d\n  max_parallel: 8\n  agent_template:\n    - shell: \"true\"\n", items))
	runWorker(t, srv, natsconn.DefaultQueue)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	r := <-runMap(ctx, j, Options{Conn: srv.Connect(t), Dist: state.Dist{Queue: natsconn.DefaultQueue}, Warn: io.Discard})
	if r.err != nil || r.sum.Items.Succeeded != items {
		t.Fatalf("run: %v, items %+v; want %d succeeded", r.err, r.sum.Items, items)
	}
	if err := j.Finish(state.Completed, 0, nil, nil); err != nil {
		t.Fatal(err)
	}
	if st := streamState(t, objs.Results); st.Msgs != 0 {
		t.Errorf("the results stream holds %d results after the job, want 0", st.Msgs)
	}
}
