package natscoord

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/runnerdev/runner/internal/eventlog"
	"github.com/runnerdev/runner/internal/natsconn"
	"github.com/runnerdev/runner/internal/state"
	"github.com/runnerdev/runner/internal/testkit"
)

// The tasks dispatched while a message is published go together in the
// next one, and a batch delivered again after its worker was lost runs
// only its unfinished items: here a stand-in worker takes every message,
// stores the result of each one's first item (its run "done" without
// running) and is lost before acknowledging it; once the coordinator has
// recorded those, a real worker gets the messages again and runs only the
// other items, each once, and the job ends with all succeeded.
func TestRedeliveredBatchRunsOnlyItsUnfinishedItems(t *testing.T) {
	srv, js, objs := serve(t)
	dir := t.TempDir()
	t.Chdir(dir)
	const items = 8
	j := startJob(t, dir, `mode: mapreduce
map:
  input: seq 1 8
  max_parallel: 8
  agent_template:
    - shell: echo ${item} >> runs.log
`)
	ctx, cancel := context.WithTimeout(t.Context(), testkit.Scale(60*time.Second))
	defer cancel()
	done := runMap(ctx, j, Options{Conn: srv.Connect(t), Dist: state.Dist{Queue: natsconn.DefaultQueue}, Warn: io.Discard, Batch: 4})
	tasks, err := objs.WorkerTasks(t.Context(), natsconn.DefaultQueue, natsconn.DefaultAckWait)
	if err != nil {
		t.Fatal(err)
	}
	var finished, rest []string // the items the stand-in finished, and the others
	var lost []jetstream.Msg
	largest := 0
	for len(finished)+len(rest) < items {
		msg, err := tasks.Next(jetstream.FetchMaxWait(testkit.Scale(10 * time.Second)))
		if err != nil {
			t.Fatalf("pulling the job's tasks: %v", err)
		}
		var b natsconn.Batch
		if err := json.Unmarshal(msg.Data(), &b); err != nil {
			t.Fatal(err)
		}
		largest = max(largest, len(b.Tasks))
		first := b.Tasks[0]
		key := natsconn.SubjectKey(msg.Subject())
		body, _ := json.Marshal(natsconn.Result{Index: first.Index, ItemID: first.ItemID, Attempt: first.Attempt, Epoch: first.Epoch, Worker: "lost", Delivery: 1})
		if err := natsconn.Publish(t.Context(), js, natsconn.NewMsg(natsconn.ResultSubject(key, first.Index), "j", body), natsconn.ResultMsgID(key, first.Index, first.Attempt, first.Epoch)); err != nil {
			t.Fatal(err)
		}
		lost = append(lost, msg)
		finished = append(finished, first.ItemID)
		for _, task := range b.Tasks[1:] {
			rest = append(rest, task.ItemID)
		}
	}
	for _, msg := range lost {
		if err := msg.Nak(); err != nil { // lost: the message goes to the next worker at once
			t.Fatal(err)
		}
	}
	if largest < 2 {
		t.Fatalf("every task went in a message of its own; want the 8 dispatched at once in batches")
	}
	if !testkit.Poll(func() bool {
		succeeded, _ := eventlog.Read(j.Layout().Events, eventlog.Query{Types: []eventlog.Type{eventlog.TypeItemSucceeded}})
		return len(succeeded) == len(finished)
	}) {
		t.Fatal("the results of the lost worker's finished items are not recorded after 10 s")
	}
	runWorker(t, srv, natsconn.DefaultQueue)
	r := <-done
	if r.err != nil || r.sum.Items.Succeeded != items {
		t.Fatalf("run: %v, items %+v; want %d succeeded", r.err, r.sum.Items, items)
	}
	runs, _ := os.ReadFile("runs.log")
	got := slices.Sorted(slices.Values(strings.Fields(string(runs))))
	if slices.Sort(rest); !slices.Equal(got, rest) {
		t.Errorf("items run: %q, want those the lost worker did not finish, each once: %q (it finished %q)", got, rest, finished)
	}
}
