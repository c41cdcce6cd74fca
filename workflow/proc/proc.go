package proc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Defaults and limits.
const (
	// TailSize is how many trailing bytes of each stream Result keeps in
	// StdoutTail and StderrTail.
	TailSize = 64 << 10
	// DefaultGrace is the delay between SIGTERM and SIGKILL when Spec.Grace
	// is zero.
	DefaultGrace = 2 * time.Second
	// DefaultCaptureLimit bounds each full capture when Spec.CaptureLimit is
	// zero or negative.
	DefaultCaptureLimit = 16 << 20

	// shellPath is the shell every command runs under.
	shellPath = "/bin/sh"
	// pipeWait bounds how long Run waits for the output pipes to reach EOF
	// once the shell has exited.
	pipeWait = time.Second
	// MaxInlineScript is the longest command passed as sh -c's argument;
	// a longer one (Linux refuses arguments over 128 KiB) runs from a
	// temporary file instead.
	MaxInlineScript = 64 << 10
)

// Spec describes one run of a shell command.
type Spec struct {
	Command string        // run as: /bin/sh -c Command
	Dir     string        // working directory ("" = current)
	Env     []string      // complete environment (nil = empty env, NOT inherited)
	Stdin   io.Reader     // nil = /dev/null
	Stdout  io.Writer     // live copy of stdout as it arrives (may be nil)
	Stderr  io.Writer     // live copy of stderr as it arrives (may be nil)
	Timeout time.Duration // bound on this run; 0 (or negative) = none
	Grace   time.Duration // between SIGTERM and SIGKILL to the group; 0 = DefaultGrace

	CaptureStdout bool // keep the full stdout in Result.Stdout (up to CaptureLimit)
	CaptureStderr bool // keep the full stderr in Result.Stderr (up to CaptureLimit)
	CaptureLimit  int  // per stream; 0 = DefaultCaptureLimit; beyond it Result.Truncated is set
}

// Kind classifies how a run ended.
type Kind string

// Kinds of Result.
const (
	KindOK       Kind = "ok"       // the shell exited with status 0
	KindExit     Kind = "exit"     // the shell exited with a non-zero status
	KindSignal   Kind = "signal"   // the shell died of a signal it was not sent by Run
	KindTimeout  Kind = "timeout"  // Spec.Timeout elapsed and the group was killed
	KindSpawn    Kind = "spawn"    // the shell could not be started
	KindCanceled Kind = "canceled" // the parent context was done and the group was killed
)

// Result describes the outcome of Run.
type Result struct {
	Kind Kind
	// ExitCode is 0 on success, the exit status on KindExit, 124 on
	// timeout (like timeout(1)), -1 when the shell was not started and
	// 128+N when the shell was killed by signal N. On KindCanceled it
	// reflects how the shell actually ended (usually 143, SIGTERM).
	ExitCode int
	// Signal names the signal that killed the shell ("SIGKILL",
	// "SIGSEGV", or "signal N" for uncommon ones); "" if it exited.
	Signal string
	// Stdout and Stderr hold the full captures, if requested (nil if empty).
	Stdout, Stderr []byte
	// Truncated reports that a requested capture exceeded CaptureLimit and
	// only its first CaptureLimit bytes were kept.
	Truncated bool
	// StdoutTail and StderrTail always hold the last TailSize bytes of
	// each stream (nil if empty).
	StdoutTail, StderrTail []byte
	// Duration is the wall time of Run.
	Duration time.Duration
	// Err is nil on KindOK and a descriptive error otherwise: "exit status
	// 22", "timed out after 30s", "killed by signal SIGSEGV", "cannot start:
	// ...", or for KindCanceled an error wrapping context.Cause of the
	// parent context.
	Err error
}

// devNull is shared by all runs as the stdin of commands without one; it is
// only ever passed to the kernel, never read.
var devNull = sync.OnceValues(func() (*os.File, error) { return os.Open(os.DevNull) })

// Run runs spec.Command under /bin/sh in a new process group and reports how
// it ended. It never panics and is safe to call from many goroutines.
func Run(ctx context.Context, spec Spec) Result {
	start := time.Now()
	res := run(ctx, &spec)
	res.Duration = time.Since(start)
	return res
}

func run(ctx context.Context, spec *Spec) Result {
	if ctx == nil {
		ctx = context.Background()
	}
	if ctx.Err() != nil {
		return canceled(ctx, -1)
	}
	runCtx := ctx
	var timeout *timeoutError
	if spec.Timeout > 0 {
		timeout = &timeoutError{d: spec.Timeout}
		var cancel context.CancelFunc
		runCtx, cancel = context.WithTimeoutCause(ctx, spec.Timeout, timeout)
		defer cancel()
	}

	grace := spec.Grace
	if grace <= 0 {
		grace = DefaultGrace
	}
	limit := spec.CaptureLimit
	if limit <= 0 {
		limit = DefaultCaptureLimit
	}

	args := []string{"-c", spec.Command}
	if len(spec.Command) > MaxInlineScript {
		script, err := scriptFile(spec.Command)
		if err != nil {
			return spawnFailed(err)
		}
		defer os.Remove(script)
		args = []string{script}
	}
	cmd := exec.CommandContext(runCtx, shellPath, args...)
	cmd.Dir = spec.Dir
	cmd.Env = spec.Env
	if cmd.Env == nil {
		cmd.Env = []string{} // non-nil: exec would otherwise inherit os.Environ()
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}

	var stdinR, stdinW *os.File // pipe for a Stdin that is not an *os.File
	switch r := spec.Stdin.(type) {
	case nil:
		if f, err := devNull(); err == nil {
			cmd.Stdin = f
		} // else: leave nil and let exec open /dev/null itself
	case *os.File:
		cmd.Stdin = r
	default:
		pr, pw, err := os.Pipe()
		if err != nil {
			return spawnFailed(err)
		}
		cmd.Stdin, stdinR, stdinW = pr, pr, pw
	}

	var shared *sync.Mutex
	if spec.Stdout != nil && sameWriter(spec.Stdout, spec.Stderr) {
		shared = new(sync.Mutex)
	}
	out := stream{live: spec.Stdout, mu: shared, capture: spec.CaptureStdout, limit: limit}
	errs := stream{live: spec.Stderr, mu: shared, capture: spec.CaptureStderr, limit: limit}
	outW, err := out.open()
	if err != nil {
		closeAll(stdinR, stdinW)
		return spawnFailed(err)
	}
	errW, err := errs.open()
	if err != nil {
		closeAll(stdinR, stdinW, out.r, outW)
		return spawnFailed(err)
	}
	cmd.Stdout, cmd.Stderr = outW, errW

	// Run reads the pipes itself (so it can kill the group between the
	// shell's exit and the wait for EOF), hence exec starts no copying
	// goroutines and WaitDelay only acts as a backstop: should the group
	// SIGKILL somehow miss the shell, exec kills it directly.
	cmd.WaitDelay = grace + pipeWait

	g := &group{grace: grace}
	var killed atomic.Bool
	cmd.Cancel = func() error {
		// Called by exec (in its context-watching goroutine) when runCtx is
		// done, possibly before Start returns (cmd.Process is already set);
		// it completes before cmd.Wait returns.
		if g.terminate(cmd.Process.Pid) {
			killed.Store(true)
			return nil
		}
		return os.ErrProcessDone
	}

	err = cmd.Start()
	closeAll(stdinR, outW, errW) // the child has its copies; EOF must come from it alone
	if err != nil {
		closeAll(stdinW, out.r, errs.r)
		if runCtx.Err() != nil { // Start refuses an already-done context
			return interrupted(ctx, runCtx, timeout, -1)
		}
		return spawnFailed(err)
	}

	done := make(chan struct{}, 2)
	go out.copy(done)
	go errs.copy(done)
	if stdinW != nil {
		go copyStdin(stdinW, spec.Stdin)
	}

	waitErr := cmd.Wait()

	// The shell is gone: terminate whatever it left behind in its group,
	// then collect the output it (or they) already wrote.
	if !g.terminate(cmd.Process.Pid) {
		g.disarm()
	}
	closeAll(stdinW)
	awaitStreams(done, out.r, errs.r)

	res := classify(cmd.ProcessState, waitErr)
	if killed.Load() {
		sig := res.Signal
		res = interrupted(ctx, runCtx, timeout, res.ExitCode)
		res.Signal = sig
	}
	res.StdoutTail, res.StderrTail = out.tail.Bytes(), errs.tail.Bytes()
	res.Stdout, res.Stderr = out.buf, errs.buf
	res.Truncated = out.truncated || errs.truncated
	return res
}

// scriptFile writes a long command to a private temporary file for sh to
// read.
func scriptFile(command string) (string, error) {
	f, err := os.CreateTemp("", "runner-script-*.sh")
	if err != nil {
		return "", fmt.Errorf("long command: %w", err)
	}
	_, werr := f.WriteString(command)
	if err := errors.Join(werr, f.Close()); err != nil {
		os.Remove(f.Name())
		return "", fmt.Errorf("long command: %w", err)
	}
	return f.Name(), nil
}

// awaitStreams waits for both stream copiers to finish. If they have not
// reached EOF within pipeWait (some process outside the group still holds
// the pipes), the read ends are closed to unblock them.
func awaitStreams(done <-chan struct{}, files ...*os.File) {
	var t *time.Timer
	for range 2 {
		select {
		case <-done:
			continue // fast path: no timer at all
		default:
		}
		if t == nil {
			t = time.NewTimer(pipeWait)
			defer t.Stop()
		}
		select {
		case <-done:
		case <-t.C:
			closeAll(files...) // readers now fail promptly; t never fires again
			<-done
		}
	}
}

// copyStdin feeds r to the child's stdin pipe until EOF or until Run closes
// w. A Read that blocks forever keeps this goroutine alive, but never Run.
func copyStdin(w *os.File, r io.Reader) {
	defer func() { _ = recover() }() // a panicking Reader must not crash the program
	defer w.Close()
	_, _ = io.Copy(w, r)
}

// closeAll closes the non-nil files, ignoring errors (including double
// closes, which os.File reports harmlessly).
func closeAll(files ...*os.File) {
	for _, f := range files {
		if f != nil {
			_ = f.Close()
		}
	}
}

// sameWriter reports whether a and b are the same comparable writer.
func sameWriter(a, b io.Writer) (same bool) {
	defer func() {
		if recover() != nil {
			same = false // equal dynamic types that are not comparable
		}
	}()
	return a == b
}

// spawnFailed is the Result of a shell that could not be started.
func spawnFailed(err error) Result {
	return Result{Kind: KindSpawn, ExitCode: -1, Err: fmt.Errorf("cannot start: %w", err)}
}
