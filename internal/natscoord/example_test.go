package natscoord_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/runnerdev/runner/internal/eventlog"
	"github.com/runnerdev/runner/internal/itemrun"
	"github.com/runnerdev/runner/internal/itemtask"
	"github.com/runnerdev/runner/internal/job"
	"github.com/runnerdev/runner/internal/jobdlq"
	"github.com/runnerdev/runner/internal/natsconn"
	"github.com/runnerdev/runner/internal/natscoord"
	"github.com/runnerdev/runner/internal/natstest"
	"github.com/runnerdev/runner/internal/natsworker"
	"github.com/runnerdev/runner/internal/state"
	"github.com/runnerdev/runner/mapreduce"
	"github.com/runnerdev/runner/workflow"
)

// A worker pulls a job's tasks from a NATS server (here one in this
// process) and runs them; the job's process sends them with the NATS
// backend and records their results.
func ExampleWorker() {
	dir, _ := os.MkdirTemp("", "example")
	defer os.RemoveAll(dir)
	srv, err := natstest.StartIn(filepath.Join(dir, "nats"))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer srv.Shutdown()
	ctx := context.Background()
	where := natsconn.Connection{URL: srv.URL()}

	// The worker: as `runner worker` makes it.
	wc, err := natsconn.Connect(ctx, where, "example worker")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer wc.Close()
	w, err := natsworker.NewWorker(ctx, natsworker.WorkerOptions{
		Conn: wc, Queue: natsconn.DefaultQueue, Concurrency: 2, Name: "w1", StoreDir: filepath.Join(dir, "worker"),
		Open: func(ctx context.Context, portable json.RawMessage, dir string, emit func(eventlog.Event), live *itemtask.Live) (itemtask.Opened, error) {
			return itemrun.OpenPortable(ctx, portable, dir, "w1", emit, live)
		},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	wctx, stop := context.WithCancel(ctx)
	stopped := make(chan error)
	go func() { stopped <- w.Run(wctx) }()
	defer func() { stop(); <-stopped }()

	// The job's process: its items go to the worker's queue.
	src := []byte(`mode: mapreduce
map:
  input: printf 'a\nb\n'
  agent_template:
    - shell: echo "item ${item} on $RUNNER_WORKER"
reduce:
  - shell: echo "${map.successful} of ${map.total} items ran on workers"
`)
	wf, _ := workflow.Parse("example.yml", src)
	j, err := job.Start(wf, src, job.Options{Store: state.Store{Dir: filepath.Join(dir, "state")}, JobID: "example", Stdout: os.Stdout, Stderr: io.Discard})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer j.Close()
	jc, err := natsconn.Connect(ctx, where, "example job")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer jc.Close()
	sum, err := mapreduce.Run(ctx, j, mapreduce.Options{
		Dispatcher: natscoord.New(natscoord.Options{Conn: jc, Dist: state.Dist{Queue: natsconn.DefaultQueue}}),
		DLQ:        jobdlq.Open(ctx, j.ID(), j.Layout().DLQ, io.Discard),
	})
	fmt.Println(sum.Items.Succeeded, err)
	// Output:
	// 2 of 2 items ran on workers
	// 2 <nil>
}
