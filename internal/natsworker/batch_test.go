package natsworker

import (
	"encoding/json"
	"io"
	"slices"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/runnerdev/runner/internal/natsconn"
	"github.com/runnerdev/runner/internal/natstest"
	"github.com/runnerdev/runner/internal/testkit"
)

// A batch delivered again runs only its items whose results their
// coordinator still awaits and are not stored; without an answer that
// fits the question (no coordinator runs the job), every item whose
// result is not stored runs.
func TestRedeliveredBatchRunsWhatIsAwaited(t *testing.T) {
	srv := natstest.Start(t)
	conn := srv.Connect(t)
	w, err := NewWorker(t.Context(), WorkerOptions{Conn: conn, Queue: natsconn.DefaultQueue, Concurrency: 1, Name: "w",
		AckWait: testkit.Scale(2 * time.Second), StoreDir: t.TempDir(), Log: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	const key = "k"
	var tasks []natsconn.Task
	for i, id := range []string{"1", "2", "3"} {
		tasks = append(tasks, natsconn.Task{JobID: "j", Index: i + 1, ItemID: id, Attempt: 1, Epoch: 1})
	}
	stored, _ := json.Marshal(natsconn.Result{Index: 3, ItemID: "3", Attempt: 1, Epoch: 1})
	if err := natsconn.Publish(t.Context(), w.js, natsconn.NewMsg(natsconn.ResultSubject(key, 3), "j", stored), "result-3"); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name   string
		answer []bool // nil: no coordinator answers
		want   []string
	}{
		{"answered", []bool{true, false, true}, []string{"1"}},
		{"no answer", nil, []string{"1", "2"}},
		{"an answer of another length", []bool{false}, []string{"1", "2"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.answer != nil {
				reply, _ := json.Marshal(natsconn.Awaited{Awaited: c.answer})
				sub, err := conn.Subscribe(natsconn.AwaitedSubject(key), func(m *nats.Msg) { _ = m.Respond(reply) })
				if err != nil {
					t.Fatal(err)
				}
				defer sub.Unsubscribe()
			}
			var got []string
			for _, task := range w.awaited(t.Context(), key, tasks) {
				got = append(got, task.ItemID)
			}
			if !slices.Equal(got, c.want) {
				t.Errorf("runs %v, want %v", got, c.want)
			}
		})
	}
}
