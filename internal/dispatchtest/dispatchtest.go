// Package dispatchtest is the conformance suite of the item seam: Run
// tests one dispatcher (local, `runner agent` processes, NATS workers)
// against the contract of package itemtask, each behaviour a subtest,
// skipped when the dispatcher does not declare the capability it needs.
//
//	func TestConformance(t *testing.T) {
//		dispatchtest.Run(t, dispatchtest.Subject{Backend: func(t *testing.T, j *job.Job) itemtask.Backend { ... }})
//	}
//
// Each subtest starts a job of its own (a real one, in a temporary state
// directory that is also the working directory), opens the dispatcher
// with a Host that records what it is told, and sends it tasks whose
// steps are real shell commands. It is meant for tests only.
package dispatchtest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/runnerdev/runner/dlq"
	"github.com/runnerdev/runner/internal/attemptlog"
	"github.com/runnerdev/runner/internal/eventlog"
	"github.com/runnerdev/runner/internal/itemtask"
	"github.com/runnerdev/runner/internal/job"
	"github.com/runnerdev/runner/internal/jobdlq"
	"github.com/runnerdev/runner/internal/state"
	"github.com/runnerdev/runner/internal/testkit"
	"github.com/runnerdev/runner/mapreduce"
	"github.com/runnerdev/runner/workflow"
)

// Subject is a dispatcher under test.
type Subject struct {
	// Backend is where the items of j go: the dispatcher's backend, made
	// for the job.
	Backend func(t *testing.T, j *job.Job) itemtask.Backend
	// Lose is a shell command that makes the runner of the step that
	// runs it lost (kills it); "" when the runner cannot be lost without
	// the test (it is the test's own process).
	Lose string
	// Frames is what the names of the functions of the dispatcher's own
	// goroutines start with (as a stack shows them: "pkg.(*Type)."),
	// which Close must end; "" for a dispatcher that starts none.
	Frames string
	// Held is what the dispatcher's server holds of job j; nil for a
	// dispatcher whose outcomes live in its process only.
	Held func(t *testing.T, j *job.Job) Held
}

// Held is what a dispatcher's server holds of a job.
type Held struct {
	// Unacked counts the outcomes not acknowledged: the server would
	// deliver them again.
	Unacked int
	// Delivered counts the deliveries of outcomes: one per outcome,
	// unless one came again.
	Delivered int
	// Left names everything else it holds of the job: its messages,
	// consumers, buckets and their entries.
	Left []string
}

// template is the agent template of every job of the suite: the first
// step echoes the item's word, the second runs the item's command (sh -c)
// and is retried once after a short delay when it exits with 75.
const template = `mode: mapreduce
map:
  input: seq 1 1
  agent_template:
    - shell: "echo one-${item.word} of ${item_total}"
    - shell: "sh -c ${item.two}"
      retry_config: {attempts: 2, backoff: fixed, initial_delay: 20ms, retry_on: [{exit_codes: [75]}]}
`

// deadline bounds every wait of the suite: a handshake, not a timing.
var deadline = testkit.Scale(testkit.Wait)

// Run runs the conformance suite against s.
func Run(t *testing.T, s Subject) {
	t.Run("outcome", func(t *testing.T) { testOutcome(t, s) })
	t.Run("failure", func(t *testing.T) { testFailure(t, s) })
	t.Run("stale", func(t *testing.T) { testStale(t, s) })
	t.Run("lost", func(t *testing.T) { testLost(t, s) })
	t.Run("checkpoint_resume", func(t *testing.T) { testCheckpointResume(t, s) })
	t.Run("slot_release", func(t *testing.T) { testSlotRelease(t, s) })
	t.Run("live_events", func(t *testing.T) { testLiveEvents(t, s) })
	t.Run("cancel", func(t *testing.T) { testCancel(t, s) })
	t.Run("close", func(t *testing.T) { testClose(t, s) })
	t.Run("recorded", func(t *testing.T) { testRecorded(t, s) })
	t.Run("worktrees", func(t *testing.T) { testWorktrees(t, s) })
}

// fixture is one subtest's job, its dispatcher's backend and the host
// that dispatcher reports to.
type fixture struct {
	job     *job.Job
	backend itemtask.Backend
	host    *Host
	dir     string // the job's working directory
	seq     int
}

// start starts a job of src in a directory of the test's, which becomes
// the working directory.
func start(t *testing.T, s Subject, src string) *fixture {
	t.Helper()
	dir := t.TempDir()
	t.Chdir(dir)
	return startIn(t, s, src, dir, job.Options{})
}

// startIn starts a job of src in dir, the working directory, with opts
// (its store, id and outputs set here).
func startIn(t *testing.T, s Subject, src, dir string, opts job.Options) *fixture {
	t.Helper()
	wf, err := workflow.Parse("conformance.yml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	// The events a dispatcher writes to the job's log itself (the local
	// one) reach the host as those it is told of.
	h := &Host{}
	opts.Store, opts.JobID, opts.Stdout, opts.Stderr, opts.Listener = state.Store{Dir: filepath.Join(dir, ".runner")}, "conformance", io.Discard, io.Discard, h.record
	j, err := job.Start(wf, []byte(src), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { j.Close() })
	h.job = j
	return &fixture{job: j, backend: s.Backend(t, j), host: h, dir: dir}
}

// open opens the dispatcher, reporting to f.host, and closes it when the
// test ends.
func (f *fixture) open(t *testing.T) itemtask.Dispatcher {
	t.Helper()
	view, err := mapreduce.View(t.Context(), f.job)
	if err != nil {
		t.Fatal(err)
	}
	d, err := f.backend.Open(t.Context(), view, f.host)
	if err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	t.Cleanup(func() { once.Do(func() { d.Close() }) })
	return d
}

// task is the next task of the job: an item with word and the command two.
func (f *fixture) task(word, two string) itemtask.Task {
	f.seq++
	item, _ := json.Marshal(map[string]string{"word": word, "two": two})
	return itemtask.Task{JobID: f.job.ID(), Index: f.seq, ItemID: word, Item: item, Attempt: 1, Total: 7,
		DispatchID: fmt.Sprintf("%s.%d", word, f.seq), Seed: f.job.Seed(), Run: attemptlog.RunFirst}
}

// dispatch dispatches t within the suite's deadline.
func dispatch(t *testing.T, d itemtask.Dispatcher, task itemtask.Task) (itemtask.Outcome, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), deadline)
	defer cancel()
	return d.Dispatch(ctx, task)
}

// skipUnless skips a test of a capability the subject does not declare.
func skipUnless(t *testing.T, f *fixture, can bool, capability string) {
	t.Helper()
	if !can {
		t.Skipf("%s does not declare the capability %s", f.backend.Name, capability)
	}
}

// A task runs to an outcome of its own dispatch, with its steps' output;
// the engine's Recorded is taken for it.
func testOutcome(t *testing.T, s Subject) {
	f := start(t, s, template)
	d := f.open(t)
	task := f.task("a", "echo two-a")
	out, err := dispatch(t, d, task)
	if err != nil {
		t.Fatalf("Dispatch: %v", err)
	}
	if out.DispatchID != task.DispatchID || out.Failed || !strings.Contains(out.Output, "one-a of 7\n") || !strings.Contains(out.Output, "two-a\n") {
		t.Errorf("outcome %+v, want a success of %s with both steps' output (the first naming the task's total)", out, task.DispatchID)
	}
	d.Recorded(t.Context(), out.DispatchID)
	if f.backend.Can.Checkpoints {
		if got := f.host.checkpointed(task.DispatchID); got != "0,1" {
			t.Errorf("checkpoints of steps %s, want 0,1", got)
		}
	}
}

// A step that fails fails the task: the outcome says which step, its
// exit code and its stderr.
func testFailure(t *testing.T, s Subject) {
	f := start(t, s, template)
	d := f.open(t)
	task := f.task("b", "echo broken >&2; exit 3")
	out, err := dispatch(t, d, task)
	if err != nil {
		t.Fatalf("Dispatch: %v", err)
	}
	fl := out.Failure
	if !out.Failed || fl.ExitCode != 3 || fl.Attempt != task.Attempt || fl.Step == "" || !strings.Contains(fl.StderrTail, "broken") {
		t.Errorf("outcome %+v, want a failure of the second step with exit code 3 and its stderr", out)
	}
}

// A dispatch whose checkpoint the host refuses as stale (the item's
// current dispatch is another one) stops without an outcome, before its
// next step.
func testStale(t *testing.T, s Subject) {
	f := start(t, s, template)
	skipUnless(t, f, f.backend.Can.Checkpoints, "Checkpoints")
	f.host.Refuse = itemtask.ErrStale
	d := f.open(t)
	out, err := dispatch(t, d, f.task("c", "touch second-ran"))
	if err == nil {
		t.Errorf("Dispatch = %+v, want an error", out)
	}
	if _, serr := os.Stat("second-ran"); serr == nil {
		t.Error("the step after the refused checkpoint ran")
	}
}

// An item whose runner is lost at every attempt ends, after three
// losses, as a failure of kind lost.
func testLost(t *testing.T, s Subject) {
	if s.Lose == "" {
		t.Skip("the runner cannot be lost: it is the test's own process")
	}
	f := start(t, s, "mode: mapreduce\nmap:\n  input: echo x\n  agent_template:\n    - shell: "+strconv.Quote(s.Lose)+"\n")
	ctx, cancel := context.WithTimeout(t.Context(), deadline)
	defer cancel()
	q := jobdlq.Open(ctx, f.job.ID(), f.job.Layout().DLQ, io.Discard)
	sum, err := mapreduce.Run(ctx, f.job, mapreduce.Options{DLQ: q, Dispatcher: f.backend})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	var item dlq.Item
	if err := q.Update(func(db *dlq.DB) (err error) { item, err = db.Get("x"); return err }); err != nil {
		t.Fatal(err)
	}
	if fl := item.Failures; sum.Items.DLQ != 1 || len(fl) != 1 || fl[0].Kind != itemtask.KindLost {
		t.Errorf("items %+v, failures %+v; want the item in the DLQ with one failure of kind lost", sum.Items, fl)
	}
}

// A task sent with the checkpoints of an earlier run goes on after them:
// the steps they hold do not run again and their output is the task's.
func testCheckpointResume(t *testing.T, s Subject) {
	f := start(t, s, template)
	skipUnless(t, f, f.backend.Can.Checkpoints, "Checkpoints")
	d := f.open(t)
	task := f.task("d", "echo two-d")
	task.Checkpoints = []state.StepRecord{{Index: 0, Key: "step-1", Status: "succeeded", Output: "one-saved\n"}}
	out, err := dispatch(t, d, task)
	if err != nil {
		t.Fatalf("Dispatch: %v", err)
	}
	if out.Failed || strings.Contains(out.Output, "one-d") || !strings.Contains(out.Output, "one-saved\n") || !strings.Contains(out.Output, "two-d\n") {
		t.Errorf("outcome %+v, want the saved first step's output and the second step's", out)
	}
	if got := f.host.checkpointed(task.DispatchID); got != "1" {
		t.Errorf("checkpoints of steps %s, want 1", got)
	}
}

// A step that waits out its retry delay gives the job's slot back and
// takes it again before it goes on.
func testSlotRelease(t *testing.T, s Subject) {
	f := start(t, s, template)
	skipUnless(t, f, f.backend.Can.SlotRelease, "SlotRelease")
	d := f.open(t)
	out, err := dispatch(t, d, f.task("e", "test -e failed-once || { touch failed-once; exit 75; }"))
	if err != nil || out.Failed {
		t.Fatalf("Dispatch = %+v, %v; want a success at the step's second attempt", out, err)
	}
	if r, a := f.host.slot.counts(); r != 1 || a != 1 {
		t.Errorf("slot released %d and acquired %d times, want 1 and 1", r, a)
	}
}

// The events of a task's steps reach the job, attributed to its item;
// with LiveEvents, while the task runs (its second step waits for the
// first step's step_completed).
func testLiveEvents(t *testing.T, s Subject) {
	f := start(t, s, template)
	h := f.host
	d := f.open(t)
	two := "echo two-f"
	if f.backend.Can.LiveEvents {
		// Bounded: 3000 polls of 10 ms.
		two = "i=0; while ! test -e go && [ $i -lt 3000 ]; do sleep 0.01; i=$((i+1)); done; test -e go"
		h.notify(func(e eventlog.Event) {
			if e.Type == eventlog.TypeStepCompleted {
				os.WriteFile(filepath.Join(f.dir, "go"), nil, 0o600)
			}
		})
	}
	task := f.task("f", two)
	out, err := dispatch(t, d, task)
	if err != nil || out.Failed {
		t.Fatalf("Dispatch = %+v, %v", out, err)
	}
	if got := h.eventTypes(task.ItemID); !strings.Contains(got, string(eventlog.TypeStepCompleted)) {
		t.Errorf("events of the item: %s; want its steps'", got)
	}
}

// A task whose ctx ends stops without an outcome, with the ctx's cause,
// and its step's process is gone once the dispatcher is closed.
func testCancel(t *testing.T, s Subject) {
	f := start(t, s, template)
	d := f.open(t)
	ctx, cancel := context.WithCancelCause(t.Context())
	stop := errors.New("interrupted by the test")
	done := make(chan error, 1)
	go func() {
		_, err := d.Dispatch(ctx, f.task("g", "echo $$ > pid.tmp && mv pid.tmp pid && exec sleep 600"))
		done <- err
	}()
	pid := waitPID(t, "pid")
	cancel(stop)
	select {
	case err := <-done:
		if !errors.Is(err, stop) {
			t.Errorf("Dispatch = %v, want the cause %v", err, stop)
		}
	case <-time.After(deadline):
		t.Fatal("Dispatch did not end with its ctx")
	}
	if err := d.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if !testkit.Poll(func() bool { return syscall.Kill(pid, 0) != nil }) {
		syscall.Kill(pid, syscall.SIGKILL)
		t.Errorf("the step's process %d still runs", pid)
	}
}

// Close after a task returns nil and ends the goroutines the dispatcher
// started (and so its processes' readers).
func testClose(t *testing.T, s Subject) {
	f := start(t, s, template)
	d := f.open(t)
	if out, err := dispatch(t, d, f.task("h", "true")); err != nil || out.Failed {
		t.Fatalf("Dispatch = %+v, %v", out, err)
	}
	if err := d.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if s.Frames != "" && !testkit.Poll(func() bool { return Goroutines(s.Frames) == 0 }) {
		t.Errorf("%d goroutines of %s after Close", Goroutines(s.Frames), s.Frames)
	}
}

// An outcome the engine recorded (Recorded) is never delivered again: a
// server that keeps outcomes (Held) holds none of it, and nothing of the
// job once the dispatcher is closed.
func testRecorded(t *testing.T, s Subject) {
	f := start(t, s, template)
	d := f.open(t)
	for _, word := range []string{"r", "s"} {
		task := f.task(word, "true")
		out, err := dispatch(t, d, task)
		if err != nil || out.Failed || out.DispatchID != task.DispatchID {
			t.Fatalf("Dispatch = %+v, %v; want a success of %s", out, err, task.DispatchID)
		}
		d.Recorded(t.Context(), out.DispatchID)
	}
	if s.Held == nil {
		return
	}
	// The server holds none: acknowledged, or (a dispatcher that does
	// not acknowledge what the engine recorded) delivered again and
	// dropped.
	var held Held
	if !testkit.Poll(func() bool { held = s.Held(t, f.job); return held.Unacked == 0 }) {
		t.Errorf("the server would deliver %d recorded outcomes again", held.Unacked)
	} else if held.Delivered != 2 {
		t.Errorf("2 outcomes were delivered %d times: a recorded one came again", held.Delivered)
	}
	if err := d.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if held = s.Held(t, f.job); held.Unacked != 0 || len(held.Left) > 0 {
		t.Errorf("after Close the server holds %d outcomes and %q of the job, want nothing", held.Unacked, held.Left)
	}
}

// Goroutines counts the goroutines with a frame of a function whose name
// starts with prefix (as a stack shows it: "pkg.(*Type).method").
func Goroutines(prefix string) int {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	count := 0
	for g := range strings.SplitSeq(string(buf), "\n\n") {
		for line := range strings.Lines(g) {
			if strings.HasPrefix(line, prefix) {
				count++
				break
			}
		}
	}
	return count
}

// waitPID waits for the pid a step writes to path.
func waitPID(t *testing.T, path string) int {
	t.Helper()
	var pid int
	if !testkit.Poll(func() bool {
		data, err := os.ReadFile(path)
		pid, _ = strconv.Atoi(strings.TrimSpace(string(data)))
		return err == nil && pid > 0
	}) {
		t.Fatalf("no pid in %s", path)
	}
	return pid
}
