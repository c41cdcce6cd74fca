package natsworker

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/runnerdev/runner/internal/dispatchtest"
	"github.com/runnerdev/runner/internal/eventlog"
	"github.com/runnerdev/runner/internal/itemtask"
	"github.com/runnerdev/runner/internal/natsconn"
	"github.com/runnerdev/runner/internal/natstest"
	"github.com/runnerdev/runner/internal/testkit"
)

// A worker that ends after IdleExit without a task leaves nothing of its
// own running: its watch of the jobs bucket ends with Run.
func TestWorkerIdleExitEndsItsGoroutines(t *testing.T) {
	srv := natstest.Start(t)
	w, err := NewWorker(t.Context(), WorkerOptions{Conn: srv.Connect(t), Queue: natsconn.DefaultQueue, Concurrency: 1, Name: "idle",
		AckWait: testkit.Scale(2 * time.Second), IdleExit: time.Millisecond, StoreDir: t.TempDir(), Log: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Run(t.Context()); err != nil {
		t.Fatal(err)
	}
	if n := dispatchtest.Goroutines("github.com/runnerdev/runner/internal/natsworker.(*Worker)."); n != 0 {
		t.Errorf("%d goroutines of the worker run on after Run returned", n)
	}
}

// The tail of an attempt's output that goes back with its result says,
// in a first line, how much of it it left out: the coordinator's item
// log (results.json's json_log_location) holds only the tail.
func TestReadTailSaysWhatItLeftOut(t *testing.T) {
	path := filepath.Join(t.TempDir(), "item.log")
	if err := os.WriteFile(path, []byte("earlier attempt\n0123456789abcdef"), 0o600); err != nil {
		t.Fatal(err)
	}
	from := int64(len("earlier attempt\n"))
	if got := readTail(path, from, 16); got != "0123456789abcdef" {
		t.Errorf("whole: %q", got)
	}
	want := "[runner: the first 10 bytes of this attempt's output left out, its last 6 follow]\nabcdef"
	if got := readTail(path, from, 6); got != want {
		t.Errorf("cut: %q, want %q", got, want)
	}
}

// A task's lease and heartbeats start as it is received, not once the
// worker has its job open: opening a job (its copy, a worktree job's
// clone) takes long on a loaded machine, and a message not heartbeated
// meanwhile would go to another worker after ack_wait, a delivery wasted
// (TestNATSGitWorkerCrash lost items that way at load 50).
func TestTaskKeptWhileItsJobOpens(t *testing.T) {
	srv := natstest.Start(t)
	ackWait := testkit.Scale(time.Second)
	opened := make(chan struct{})
	w, err := NewWorker(t.Context(), WorkerOptions{Conn: srv.Connect(t), Queue: natsconn.DefaultQueue, Concurrency: 1, Name: "slow",
		AckWait: ackWait, StoreDir: t.TempDir(), Log: io.Discard,
		Open: func(context.Context, json.RawMessage, string, func(eventlog.Event), *itemtask.Live) (itemtask.Opened, error) {
			defer close(opened)
			time.Sleep(3 * ackWait)
			return itemtask.Opened{}, errors.New("this worker cannot run it")
		}})
	if err != nil {
		t.Fatal(err)
	}
	sendTask(t, w)
	msg, err := natsconn.Next(t.Context(), w.tasks)
	if err != nil {
		t.Fatal(err)
	}
	received := make(chan *batch, 1)
	go func() { received <- w.receive(t.Context(), msg) }()
	// Another pull while the job opens: the task comes to it only if the
	// server gave it up (ack_wait passed without a heartbeat).
	again, err := w.tasks.Next(jetstream.FetchMaxWait(3 * ackWait))
	if err == nil {
		meta, _ := again.Metadata()
		t.Errorf("the task was delivered again (delivery %d) while its job opened", meta.NumDelivered)
	}
	<-opened
	b := <-received
	if b == nil {
		t.Fatal("the task was settled, not run")
	}
	b.stopBeats()
	b.cut(nil)
}

// sendTask puts the spec of a running job j, of key k, and one task of it
// on w's queue.
func sendTask(t *testing.T, w *Worker) {
	t.Helper()
	spec, _ := json.Marshal(natsconn.Spec{Proto: natsconn.Proto, JobID: "j", Queue: natsconn.DefaultQueue, Status: natsconn.StatusRunning})
	if _, err := w.objs.Jobs.Put(t.Context(), "k", spec); err != nil {
		t.Fatal(err)
	}
	task, _ := json.Marshal(natsconn.Task{JobID: "j", Index: 1, ItemID: "1", Attempt: 1, Epoch: 1})
	m := natsconn.NewMsg(natsconn.TaskSubject(natsconn.DefaultQueue, "k", natsconn.BatchName(1, 1)), "j", natsconn.BatchBody([][]byte{task}))
	if err := natsconn.Publish(t.Context(), w.js, m, "task-1"); err != nil {
		t.Fatal(err)
	}
}

// A stopping worker lets its items run on until they end, or until
// DrainTimeout stops them (errDrained); Run returns once they have.
func TestWorkerDrainsItsItems(t *testing.T) {
	for _, c := range []struct {
		name  string
		drain time.Duration
		cause error // the item's run's, as it stops
	}{
		{"until they end", 0, nil},
		{"within DrainTimeout", testkit.Scale(100 * time.Millisecond), errDrained},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv := natstest.Start(t)
			started, release := make(chan struct{}), make(chan struct{})
			var cause error // read once Run returned
			run := runnerFunc(func(ctx context.Context, _ itemtask.Task) (itemtask.Outcome, error) {
				close(started)
				select {
				case <-release:
					return itemtask.Outcome{}, nil
				case <-ctx.Done():
					cause = context.Cause(ctx)
					return itemtask.Outcome{}, cause
				}
			})
			dir := t.TempDir()
			w, err := NewWorker(t.Context(), WorkerOptions{Conn: srv.Connect(t), Queue: natsconn.DefaultQueue, Concurrency: 1, Name: "draining",
				AckWait: testkit.Scale(10 * time.Second), DrainTimeout: c.drain, StoreDir: dir, Log: io.Discard,
				Open: func(context.Context, json.RawMessage, string, func(eventlog.Event), *itemtask.Live) (itemtask.Opened, error) {
					return itemtask.Opened{Runner: run, Mask: func(s string) string { return s },
						LogPath: func(string) string { return filepath.Join(dir, "item.log") }}, nil
				}})
			if err != nil {
				t.Fatal(err)
			}
			sendTask(t, w)
			ctx, stop := context.WithCancel(t.Context())
			returned := make(chan error, 1)
			go func() { returned <- w.Run(ctx) }()
			select {
			case <-started:
			case <-time.After(testkit.Scale(time.Minute)):
				t.Fatal("the item did not start")
			}
			stop()
			if c.drain == 0 {
				select {
				case <-returned:
					t.Fatal("Run returned while its item ran on")
				case <-time.After(testkit.Scale(200 * time.Millisecond)):
				}
				close(release)
			}
			select {
			case err := <-returned:
				if err != nil {
					t.Fatal(err)
				}
			case <-time.After(testkit.Scale(time.Minute)):
				buf := make([]byte, 1<<20)
				t.Fatalf("Run did not return\n%s", buf[:runtime.Stack(buf, true)])
			}
			if !errors.Is(cause, c.cause) {
				t.Errorf("the item stopped with %v, want %v", cause, c.cause)
			}
		})
	}
}
