package agentproc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"github.com/runnerdev/runner/internal/itemtask"
	"github.com/runnerdev/runner/internal/itemtask/remote"
)

// Config says how to start an agent.
type Config struct {
	Command []string  // its command line: `runner agent ... JOB`
	Env     []string  // its environment, which carries the job's secrets
	Stderr  io.Writer // where its diagnostics go
	// Live shows the items' output that agents started with --tag send;
	// nil for agents that send none.
	Live *itemtask.Live
}

// Bounds of the waits on an agent process, which are handshakes and not
// timings: they only keep a broken agent from hanging the job.
const (
	// readyWithin bounds an agent's start, to its ready message.
	readyWithin = time.Minute
	// stopWithin bounds an agent's exit once its stdin is closed: time to
	// stop its task's commands (TERM, then KILL after their grace).
	stopWithin = 10 * time.Second
)

// Capabilities are what a pool of agents does: everything a job's own
// process does, over the protocol.
var Capabilities = itemtask.Capabilities{Checkpoints: true, LiveEvents: true, SlotRelease: true, Worktrees: true}

// New returns the backend of a pool of agents started with cfg: an agent
// per task running, started when none is idle, reused, and stopped when
// the pool is closed. The first agent is started when the pool opens, so
// that an agent that cannot open the job fails the run before any item is
// sent.
func New(cfg Config) itemtask.Backend {
	return itemtask.Backend{Name: "runner agent processes", Can: Capabilities, Open: func(ctx context.Context, _ itemtask.Job, h itemtask.Host) (itemtask.Dispatcher, error) {
		p := &pool{cfg: cfg, tracker: remote.NewTracker(h, cfg.Live), all: map[*agentProcess]bool{}}
		a, err := p.start(ctx)
		if err != nil {
			return nil, err
		}
		p.idle = append(p.idle, a)
		return p, nil
	}}
}

var _ itemtask.Dispatcher = (*pool)(nil)

// pool is the dispatcher New makes.
type pool struct {
	cfg     Config
	tracker *remote.Tracker // hears the runs of the tasks out

	mu     sync.Mutex
	idle   []*agentProcess
	all    map[*agentProcess]bool // started and not yet seen to end
	closed bool
}

// Dispatch runs t in an idle agent, or a new one. An agent that dies,
// breaks the protocol or abandons the task is stopped, and the task's
// item stays pending.
func (p *pool) Dispatch(ctx context.Context, t itemtask.Task) (itemtask.Outcome, error) {
	a, err := p.get(ctx)
	if err != nil {
		return itemtask.Outcome{}, err
	}
	out, err := p.run(ctx, a, t)
	if err != nil {
		a.stop()
		return itemtask.Outcome{}, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		a.stop()
	} else {
		p.idle = append(p.idle, a)
	}
	return out, nil
}

// Recorded does nothing: an agent's outcome is answered by nothing.
func (p *pool) Recorded(context.Context, string) {}

// get takes an idle agent that is still alive, or starts one.
func (p *pool) get(ctx context.Context) (*agentProcess, error) {
	p.mu.Lock()
	for len(p.idle) > 0 {
		a := p.idle[len(p.idle)-1]
		p.idle = p.idle[:len(p.idle)-1]
		select {
		case <-a.done:
			delete(p.all, a)
		default:
			p.mu.Unlock()
			return a, nil
		}
	}
	closed := p.closed
	p.mu.Unlock()
	if closed {
		return nil, errors.New("agent pool closed")
	}
	return p.start(ctx)
}

// Close stops every agent and waits (a bounded time) for them to exit.
func (p *pool) Close() error {
	p.mu.Lock()
	p.closed = true
	p.idle = nil
	all := make([]*agentProcess, 0, len(p.all))
	for a := range p.all {
		all = append(all, a)
	}
	p.mu.Unlock()
	for _, a := range all {
		a.stop()
	}
	for _, a := range all {
		<-a.done // stop kills it within stopWithin
	}
	return nil
}

// run sends t to a and gives what its run tells to the tracker until a
// answers with an outcome.
func (p *pool) run(ctx context.Context, a *agentProcess, t itemtask.Task) (itemtask.Outcome, error) {
	prog := p.tracker.Track(ctx, t, nil)
	defer p.tracker.Untrack(prog)
	if err := a.send(frame{Type: typeTask, Task: &t}); err != nil {
		return itemtask.Outcome{}, err
	}
	for {
		var f frame
		select {
		case <-ctx.Done():
			return itemtask.Outcome{}, context.Cause(ctx)
		case <-a.done:
			return itemtask.Outcome{}, a.failure()
		case f = <-a.frames:
		}
		switch {
		case f.Type == typeMsg && f.Msg != nil:
			p.tracker.Receive(*f.Msg, a.answer(f.ID))
		case f.Type == typeOutcome && f.Outcome != nil:
			if f.Outcome.DispatchID == t.DispatchID {
				return *f.Outcome, nil
			}
		case f.Type == typeAbandoned:
			if f.DispatchID == t.DispatchID {
				return itemtask.Outcome{}, fmt.Errorf("agent (pid %d) abandoned task %s: %s", a.pid, t.DispatchID, f.Error)
			}
		default:
			return itemtask.Outcome{}, fmt.Errorf("agent (pid %d): unexpected %q frame", a.pid, f.Type)
		}
	}
}

// answer is how a request id of a is answered; nil for a message that
// is not a request.
func (a *agentProcess) answer(id uint64) func(remote.Reply) {
	if id == 0 {
		return nil
	}
	return func(r remote.Reply) { _ = a.send(frame{Type: typeReply, ID: id, Reply: &r}) }
}

// agentProcess is one running agent.
type agentProcess struct {
	cmd    *exec.Cmd
	pid    int
	stdin  io.WriteCloser
	frames chan frame    // what it writes, read as it comes
	done   chan struct{} // closed once it has exited
	err    error         // why it ended; set before done is closed

	sendMu   sync.Mutex
	enc      *json.Encoder
	stopOnce sync.Once
	quit     chan struct{} // closed by stop: its frames are dropped
}

// start starts an agent and waits for its ready message.
func (p *pool) start(ctx context.Context) (*agentProcess, error) {
	c := exec.Command(p.cfg.Command[0], p.cfg.Command[1:]...)
	c.Env = p.cfg.Env
	c.Stderr = p.cfg.Stderr
	// Its own process group: a terminal's ^C goes to the coordinator,
	// which stops its agents in order.
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	c.WaitDelay = stopWithin
	stdin, err := c.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := c.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := c.Start(); err != nil {
		return nil, fmt.Errorf("agent: %w", err)
	}
	a := &agentProcess{cmd: c, pid: c.Process.Pid, stdin: stdin, enc: json.NewEncoder(stdin),
		frames: make(chan frame), done: make(chan struct{}), quit: make(chan struct{})}
	p.mu.Lock()
	p.all[a] = true
	p.mu.Unlock()
	go a.read(stdout)
	timer := time.NewTimer(readyWithin)
	defer timer.Stop()
	select {
	case f := <-a.frames:
		if f.Type == typeReady {
			return a, nil
		}
		err = fmt.Errorf("agent (pid %d) began with %q instead of ready", a.pid, f.Type)
	case <-a.done:
		err = fmt.Errorf("agent could not start: %w", a.failure())
	case <-ctx.Done():
		err = context.Cause(ctx)
	case <-timer.C:
		err = fmt.Errorf("agent (pid %d) was not ready within %v", a.pid, readyWithin)
	}
	a.stop()
	return nil, err
}

// read passes the agent's frames on until its stdout ends or breaks,
// then waits for it to exit.
func (a *agentProcess) read(stdout io.Reader) {
	dec := json.NewDecoder(stdout)
	dec.UseNumber()
	var rerr error
	for {
		var f frame
		if err := dec.Decode(&f); err != nil {
			if !errors.Is(err, io.EOF) {
				rerr = fmt.Errorf("broke the protocol: %w", err)
				a.stop()
				io.Copy(io.Discard, stdout) // to its end, as Wait wants
			}
			break
		}
		select {
		case a.frames <- f:
		case <-a.quit:
		}
	}
	a.stop() // an agent ends when its stdin does; one that closed its stdout otherwise is made to
	a.err = errors.Join(rerr, a.cmd.Wait())
	close(a.done)
}

// send writes one frame to the agent.
func (a *agentProcess) send(f frame) error {
	a.sendMu.Lock()
	defer a.sendMu.Unlock()
	if err := a.enc.Encode(f); err != nil {
		return fmt.Errorf("agent (pid %d): %w", a.pid, err)
	}
	return nil
}

// stop closes the agent's stdin, which makes it stop its task and exit;
// it is killed if it has not within stopWithin.
func (a *agentProcess) stop() {
	a.stopOnce.Do(func() {
		close(a.quit)
		a.stdin.Close() // also ends a write blocked on a full pipe
		kill := time.AfterFunc(stopWithin, func() { a.cmd.Process.Kill() })
		go func() { <-a.done; kill.Stop() }()
	})
}

// failure describes how an agent that exited ended.
func (a *agentProcess) failure() error {
	if a.err == nil {
		return fmt.Errorf("agent (pid %d) exited", a.pid)
	}
	return fmt.Errorf("agent (pid %d) exited: %w", a.pid, a.err)
}
