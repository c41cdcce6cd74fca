package agentproc

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/runnerdev/runner/internal/eventlog"
	"github.com/runnerdev/runner/internal/itemrun"
	"github.com/runnerdev/runner/internal/itemtask"
	"github.com/runnerdev/runner/internal/itemtask/remote"
	"github.com/runnerdev/runner/internal/job"
	"github.com/runnerdev/runner/internal/runnertest"
	"github.com/runnerdev/runner/internal/state"
	"github.com/runnerdev/runner/internal/testkit"
)

// helperEnv makes the test binary an agent (see helperAgent) instead of
// running the tests.
const helperEnv = "AGENTPROC_TEST_AGENT"

// helperJobEnv is the job a helper agent in mode job opens: its store's
// directory and its id, as a path.
const helperJobEnv = "AGENTPROC_TEST_JOB"

func TestMain(m *testing.M) {
	if mode := os.Getenv(helperEnv); mode != "" {
		helperAgent(mode)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// helperAgent is an agent process of the tests. Mode serve serves the
// protocol with a runner that does what each task's item says (see
// helperRunner); stale answers each task with messages of another
// dispatch first; garbage answers a task with a line that is not JSON;
// exit exits with 3 before it is ready; job runs the tasks of the job
// helperJobEnv names.
func helperAgent(mode string) {
	out := bufio.NewWriter(os.Stdout)
	write := func(m frame) {
		line, _ := json.Marshal(m)
		out.Write(append(line, '\n'))
		out.Flush()
	}
	switch mode {
	case "serve":
		a := NewAgent(os.Stdout)
		if err := a.Serve(context.Background(), os.Stdin, helperRunner{a}); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	case "stale", "garbage":
		write(frame{Type: typeReady, PID: os.Getpid()})
		dec := json.NewDecoder(os.Stdin)
		var f frame
		if dec.Decode(&f) != nil {
			os.Exit(1)
		}
		t := f.Task
		if mode == "garbage" {
			out.WriteString("this is not JSON\n")
			out.Flush()
			dec.Decode(&f) // until the pool closes stdin
			return
		}
		other := remote.Run{DispatchID: "other", Index: t.Index, Attempt: t.Attempt}
		write(frame{Type: typeMsg, Msg: &remote.Msg{Kind: remote.KindEvent, Run: other, Seq: 1, Event: new(eventlog.StepStarted("x", 1, "true"))}})
		write(frame{Type: typeMsg, ID: 1, Msg: &remote.Msg{Kind: remote.KindCheckpoint, Run: other, Step: &itemtask.StepRecord{Key: "x"}}})
		if dec.Decode(&f) != nil || f.Type != typeReply || f.ID != 1 || f.Reply == nil || f.Reply.Error == "" {
			fmt.Fprintf(os.Stderr, "stale checkpoint answered with %+v\n", f)
			os.Exit(1)
		}
		write(frame{Type: typeOutcome, Outcome: &itemtask.Outcome{DispatchID: "other", Failed: true}})
		mine := remote.Run{DispatchID: t.DispatchID, Index: t.Index, Attempt: t.Attempt}
		write(frame{Type: typeMsg, Msg: &remote.Msg{Kind: remote.KindEvent, Run: mine, Seq: 1, Event: new(eventlog.StepStarted("a", 1, "true"))}})
		write(frame{Type: typeOutcome, Outcome: &itemtask.Outcome{DispatchID: t.DispatchID, Output: "mine"}})
		dec.Decode(&f)
	case "exit":
		os.Exit(3)
	case "job":
		// A real agent of the job the conformance suite started: as
		// `runner agent` serves one.
		a := NewAgent(os.Stdout)
		ctx := context.Background()
		store, id := filepath.Split(os.Getenv(helperJobEnv))
		r, err := itemrun.OpenStored(ctx, id, job.Options{Store: state.Store{Dir: store}, Stdout: os.Stderr, Stderr: os.Stderr}, a.Emit, nil)
		if err == nil {
			err = a.Serve(ctx, os.Stdin, r)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
}

// helperRunner runs a task as its item says: {"pidfile": F} writes the
// agent's pid to F and waits for the task to be stopped; otherwise it
// checkpoints a step (failing the task if the ack says so), gives its slot
// back and takes it again, emits an event and succeeds.
type helperRunner struct{ a *Agent }

func (r helperRunner) Run(ctx context.Context, t itemtask.Task, slot itemtask.Slot, save func(itemtask.StepRecord) error) (itemtask.Outcome, error) {
	var item struct{ PIDFile string }
	json.Unmarshal(t.Item, &item)
	if item.PIDFile != "" {
		os.WriteFile(item.PIDFile+".tmp", []byte(strconv.Itoa(os.Getpid())), 0o600)
		os.Rename(item.PIDFile+".tmp", item.PIDFile)
		<-ctx.Done()
		return itemtask.Outcome{}, context.Cause(ctx)
	}
	if err := save(itemtask.StepRecord{Index: 0, Key: "a", Status: "succeeded", Vars: map[string]any{"n": 1}}); err != nil {
		return itemtask.Outcome{}, err
	}
	slot.Release()
	if err := slot.Acquire(ctx); err != nil {
		return itemtask.Outcome{}, err
	}
	r.a.Emit(eventlog.StepCompleted("a", 0, 0).WithItem(t.ItemID))
	return itemtask.Outcome{DispatchID: t.DispatchID, Output: "ran " + t.ItemID}, nil
}

// host is a itemtask.Host that records what it is told.
type host struct {
	mu          sync.Mutex
	events      []string // "id type"
	checkpoints []string // "id step"
	refuse      error    // what Checkpoint returns
	slot        countingSlot
}

func (h *host) Checkpoint(id string, rec itemtask.StepRecord) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.checkpoints = append(h.checkpoints, id+" "+rec.Key)
	return h.refuse
}

func (h *host) Emit(id string, e eventlog.Event) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.events = append(h.events, id+" "+string(e.Type))
	return nil
}

func (h *host) Slot(id string) itemtask.Slot { return &h.slot }

func (h *host) JobEvent(eventlog.Event)                                     {}
func (h *host) AppendLog(itemtask.Task, itemtask.Origin, time.Time, string) {}
func (h *host) UpdateMeta(func(*state.Meta)) error                          { return nil }

// countingSlot counts how it is used.
type countingSlot struct{ releases, acquires int }

func (s *countingSlot) Release()                      { s.releases++ }
func (s *countingSlot) Acquire(context.Context) error { s.acquires++; return nil }

// newPool starts a pool of helper agents in mode.
func newPool(t *testing.T, mode string, h itemtask.Host) (*pool, error) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(), helperEnv+"="+mode, raceNoExitSleep())
	d, err := New(Config{Command: []string{exe}, Env: env, Stderr: os.Stderr}).Open(t.Context(), nil, h)
	if err != nil {
		return nil, err
	}
	p := d.(*pool)
	t.Cleanup(func() { p.Close() })
	return p, nil
}

func itemTask(id string, item any) itemtask.Task {
	raw, _ := json.Marshal(item)
	return itemtask.Task{JobID: "j", ItemID: "i", Item: raw, Attempt: 1, DispatchID: id}
}

// A task runs in an agent process, which reports its checkpoint, event
// and slot moves to the host; the agent is reused for the next task, and
// Close ends it.
func TestPoolRunsTasksInAgents(t *testing.T) {
	h := &host{}
	p, err := newPool(t, "serve", h)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"d1", "d2"} {
		out, err := p.Dispatch(context.Background(), itemTask(id, "x"))
		if err != nil || out.DispatchID != id || out.Output != "ran i" {
			t.Fatalf("Dispatch(%s) = %+v, %v", id, out, err)
		}
	}
	if got := strings.Join(h.checkpoints, ","); got != "d1 a,d2 a" {
		t.Errorf("checkpoints %s", got)
	}
	if got := strings.Join(h.events, ","); got != "d1 step_completed,d2 step_completed" {
		t.Errorf("events %s", got)
	}
	if h.slot.releases != 2 || h.slot.acquires != 2 {
		t.Errorf("slot released %d and acquired %d times, want 2 and 2", h.slot.releases, h.slot.acquires)
	}
	if len(p.all) != 1 {
		t.Errorf("%d agents started for two tasks in a row, want 1", len(p.all))
	}
	agents := p.agents()
	p.Close()
	for _, a := range agents {
		select {
		case <-a.done:
		default:
			t.Errorf("agent %d still runs after Close", a.pid)
		}
	}
}

func (p *pool) agents() []*agentProcess {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []*agentProcess
	for a := range p.all {
		out = append(out, a)
	}
	return out
}

// A checkpoint the host refuses stops the task: the agent gets the error
// in its ack, abandons the task, and Dispatch fails (the item stays
// pending).
func TestPoolCheckpointRefused(t *testing.T) {
	h := &host{refuse: errors.New("item log: disk full")}
	p, err := newPool(t, "serve", h)
	if err != nil {
		t.Fatal(err)
	}
	_, err = p.Dispatch(context.Background(), itemTask("d1", "x"))
	if err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Fatalf("Dispatch = %v, want the refusal", err)
	}
	if len(h.events) != 0 {
		t.Errorf("the task went on after its checkpoint was refused: %v", h.events)
	}
}

// An agent killed with SIGKILL in the middle of a task fails its Dispatch,
// and the next task gets a new agent.
func TestPoolAgentKilled(t *testing.T) {
	h := &host{}
	p, err := newPool(t, "serve", h)
	if err != nil {
		t.Fatal(err)
	}
	pidFile := filepath.Join(t.TempDir(), "pid")
	go func() {
		if pid := waitPID(t, pidFile); pid > 0 {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	}()
	_, err = p.Dispatch(context.Background(), itemTask("d1", map[string]string{"pidfile": pidFile}))
	if err == nil || !strings.Contains(err.Error(), "signal: killed") {
		t.Fatalf("Dispatch = %v, want the agent's death", err)
	}
	if out, err := p.Dispatch(context.Background(), itemTask("d2", "x")); err != nil || out.DispatchID != "d2" {
		t.Fatalf("the next Dispatch = %+v, %v", out, err)
	}
}

// A Dispatch whose ctx ends returns at once; its agent stops the task and
// exits, which Close waits for.
func TestPoolDispatchCanceled(t *testing.T) {
	p, err := newPool(t, "serve", &host{})
	if err != nil {
		t.Fatal(err)
	}
	pidFile := filepath.Join(t.TempDir(), "pid")
	ctx, cancel := context.WithCancelCause(context.Background())
	stop := errors.New("interrupted")
	go func() {
		waitPID(t, pidFile)
		cancel(stop)
	}()
	if _, err := p.Dispatch(ctx, itemTask("d1", map[string]string{"pidfile": pidFile})); !errors.Is(err, stop) {
		t.Fatalf("Dispatch = %v, want the ctx's cause", err)
	}
	agents := p.agents()
	p.Close()
	for _, a := range agents {
		<-a.done
		if a.err != nil {
			t.Errorf("agent %d ended with %v, want a clean exit after its input closed", a.pid, a.err)
		}
	}
}

// Messages of another dispatch are ignored (a checkpoint among them is
// answered with an error): only the task's event and outcome count.
func TestPoolIgnoresStaleMessages(t *testing.T) {
	h := &host{}
	p, err := newPool(t, "stale", h)
	if err != nil {
		t.Fatal(err)
	}
	out, err := p.Dispatch(context.Background(), itemTask("d1", "x"))
	if err != nil || out.DispatchID != "d1" || out.Output != "mine" {
		t.Fatalf("Dispatch = %+v, %v; want the task's own outcome", out, err)
	}
	if got := strings.Join(h.events, ","); got != "d1 step_started" {
		t.Errorf("events %s, want only the task's", got)
	}
	if len(h.checkpoints) != 0 {
		t.Errorf("a stale checkpoint reached the host: %v", h.checkpoints)
	}
}

// An agent that writes what is not the protocol fails its Dispatch.
func TestPoolProtocolBroken(t *testing.T) {
	p, err := newPool(t, "garbage", &host{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Dispatch(context.Background(), itemTask("d1", "x")); err == nil || !strings.Contains(err.Error(), "broke the protocol") {
		t.Fatalf("Dispatch = %v, want a protocol error", err)
	}
}

// An agent that cannot start (it cannot open the job, say) fails the
// dispatcher's creation, before any item is sent.
func TestPoolAgentCannotStart(t *testing.T) {
	if _, err := newPool(t, "exit", &host{}); err == nil || !strings.Contains(err.Error(), "exit status 3") {
		t.Fatalf("New = %v, want the agent's exit", err)
	}
}

// raceNoExitSleep is GORACE for the agents, which Close waits for.
func raceNoExitSleep() string { return "GORACE=" + runnertest.RaceNoExitSleep() }

// waitPID waits (a bounded handshake) for a helper agent's pid file.
func waitPID(t *testing.T, path string) int {
	for deadline := time.Now().Add(testkit.Scale(time.Minute)); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if data, err := os.ReadFile(path); err == nil {
			pid, _ := strconv.Atoi(string(data))
			return pid
		}
	}
	t.Error("no pid file within a minute")
	return 0
}
