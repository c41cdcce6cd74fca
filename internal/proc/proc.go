package proc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"sync"
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
	// maxInlineScript is the longest command passed as sh -c's argument;
	// a longer one (Linux refuses arguments over 128 KiB) runs from a
	// temporary file instead.
	maxInlineScript = 64 << 10
)

// Spec describes one run of a shell command, or of a program run directly.
type Spec struct {
	Command string        // run as: /bin/sh -c Command, or directly when it is a plain list of words (see Words)
	Shell   bool          // run Command under /bin/sh even when it could run directly
	Args    []string      // instead of Command: run Args[0] directly with Args as its argv, found as the shell would (see program)
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
	// TailLimit is how many trailing bytes of each stream StdoutTail and
	// StderrTail keep; 0 or less = TailSize. The tails grow as output
	// comes, so a large limit costs only the runs that print that much.
	TailLimit int
	// DieWithParent has the kernel send the program SIGTERM when this
	// process dies, even of kill -9 (Linux; elsewhere it is ignored): git
	// must not go on changing a repository for a runner that is gone, and
	// on SIGTERM it removes its lock files and a worktree it was making
	// before it dies (SIGKILL would leave them). Only the program gets the
	// signal, not what it starts (its hooks): those are for EndGroup.
	DieWithParent bool
}

// Kind classifies how a run ended.
type Kind string

// Kinds of Result.
const (
	KindOK       Kind = "ok"       // the shell exited with status 0
	KindExit     Kind = "exit"     // the shell exited with a non-zero status
	KindSignal   Kind = "signal"   // the shell died of a signal it was not sent by Run
	KindTimeout  Kind = "timeout"  // Spec.Timeout elapsed and the group was killed
	KindSpawn    Kind = "spawn"    // the shell (or the program of Args) could not be started
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
	// StdoutTail and StderrTail always hold the last Spec.TailLimit
	// (default TailSize) bytes of each stream (nil if empty).
	StdoutTail, StderrTail []byte
	// StdoutBytes and StderrBytes count all the bytes of each stream, so
	// that a caller knows whether its tail is the whole output.
	StdoutBytes, StderrBytes int64
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

// usePidFD says whether runs watch the shell's exit through a pidfd where
// the kernel offers one; tests turn it off to exercise the fallback.
var usePidFD = true

// Run runs spec.Command under /bin/sh (or directly, when it is a plain
// list of words), or the program of spec.Args, in a new process group and
// reports how it ended. It never panics and is safe to call from many goroutines; ctx
// must not be nil.
func Run(ctx context.Context, spec Spec) Result {
	start := time.Now()
	res := run(ctx, &spec)
	res.Duration = time.Since(start)
	return res
}

func run(ctx context.Context, spec *Spec) Result {
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

	direct := spec.direct()
	var prog launch
	if direct == nil {
		var err error
		if prog, err = spec.program(); err != nil {
			return spawnFailed(err)
		}
		if prog.script != "" {
			defer os.Remove(prog.script)
		}
	}

	out, err := newStream(spec.Stdout, spec.CaptureStdout, limit, spec.TailLimit)
	if err != nil {
		return spawnFailed(err)
	}
	defer out.close()
	errs, err := newStream(spec.Stderr, spec.CaptureStderr, limit, spec.TailLimit)
	if err != nil {
		return spawnFailed(err)
	}
	defer errs.close()
	stdin, stdinR, stdinW, err := openStdin(spec.Stdin)
	if err != nil {
		return spawnFailed(err)
	}
	defer closeAll(stdinW)

	pidfd := -1
	sys := &syscall.SysProcAttr{Setpgid: true}
	if usePidFD {
		requestPidFD(sys, &pidfd)
	}
	if spec.DieWithParent {
		// The kernel sends the signal when the thread that forked the
		// child ends, not the process: this goroutine keeps its thread
		// (which the runtime never ends while a goroutine holds it) until
		// the child is reaped.
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		dieWithParent(sys)
	}
	pid, ran, err := start(spec, direct, prog, &syscall.ProcAttr{
		Dir:   spec.Dir,
		Files: []uintptr{stdin, uintptr(out.childFD), uintptr(errs.childFD)},
		Sys:   sys,
	})
	runtime.KeepAlive(spec.Stdin) // a caller's *os.File must stay open until here
	// The child has its copies; EOF must come from it alone.
	closeAll(stdinR)
	out.closeChildEnd()
	errs.closeChildEnd()
	if err != nil {
		return spawnFailed(startError(spec.Dir, ran.path, err))
	}
	defer closeFDs(pidfd)
	if stdinW != nil {
		go copyStdin(stdinW, spec.Stdin)
	}

	g := &group{pid: pid, grace: grace}
	if hook := groupHookOf(ctx); hook != nil {
		defer hook(pid)() // after g.finish: the group is done with
	}
	stop := context.AfterFunc(runCtx, g.interrupt)
	ws, waitErr := collect(g, pidfd, out, errs)
	stop()
	g.finish()

	res := classify(ws, waitErr)
	if ran == direct {
		res = asDash(res, ws, g.wasInterrupted(), errs)
	}
	if g.wasInterrupted() {
		sig := res.Signal
		res = interrupted(ctx, runCtx, timeout, res.ExitCode)
		res.Signal = sig
	}
	res.StdoutTail, res.StderrTail = out.tail.Bytes(), errs.tail.Bytes()
	res.StdoutBytes, res.StderrBytes = out.total, errs.total
	res.Stdout, res.Stderr = out.buf, errs.buf
	res.Truncated = out.truncated || errs.truncated
	return res
}

// start forks the child and executes in it a simple command's program
// directly, or prog (the shell, or the program of Args) when there is
// none or it could not be executed. It returns what the child runs.
func start(spec *Spec, direct *launch, prog launch, attr *syscall.ProcAttr) (pid int, ran *launch, err error) {
	if direct != nil {
		attr.Env = direct.env
		if pid, err = forkExec(direct.path, direct.argv, attr); err == nil {
			return pid, direct, nil
		}
		// Whatever stopped the program (not executable, a script without
		// #!, a directory), sh deals with it as it always has, message
		// and exit status included.
		prog, _ = spec.program() // a simple command is never long: no script file, no error
	}
	attr.Env = prog.env // nil is an empty environment to ForkExec
	pid, err = forkExec(prog.path, prog.argv, attr)
	return pid, &prog, err
}

// busyPause is how forkExec waits before trying again; a test replaces it.
var busyPause = time.Sleep

// forkExec is syscall.ForkExec, tried again for about a second while the
// file is busy (ETXTBSY). A program this process just wrote (a write_file
// step, a test's stand-in) is still open for writing in any child another
// goroutine forked meanwhile, until that child executes: the kernel then
// refuses to execute it, for a moment that is not the user's fault.
func forkExec(path string, argv []string, attr *syscall.ProcAttr) (int, error) {
	for pause := time.Millisecond; ; pause *= 2 {
		pid, err := syscall.ForkExec(path, argv, attr)
		if !errors.Is(err, syscall.ETXTBSY) || pause > 512*time.Millisecond {
			return pid, err
		}
		busyPause(pause)
	}
}

// openStdin returns the descriptor the child reads as stdin, the file to
// close once the child has started (nil if Run does not own it) and, for a
// Reader that is not a file, the write end of the pipe copyStdin feeds.
func openStdin(r io.Reader) (fd uintptr, owned, pipeW *os.File, err error) {
	switch r := r.(type) {
	case nil:
		f, err := devNull()
		if err != nil {
			return 0, nil, nil, err
		}
		return f.Fd(), nil, nil, nil
	case *os.File:
		return r.Fd(), nil, nil, nil
	default:
		pr, pw, err := os.Pipe()
		if err != nil {
			return 0, nil, nil, err
		}
		return pr.Fd(), pr, pw, nil
	}
}

// startError explains a failed ForkExec like os.StartProcess does: a
// missing working directory is named as such.
func startError(dir, path string, err error) error {
	if dir != "" {
		if _, serr := os.Stat(dir); serr != nil {
			return fmt.Errorf("working directory: %w", serr)
		}
	}
	return &os.PathError{Op: "fork/exec", Path: path, Err: err}
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

// spawnFailed is the Result of a shell that could not be started.
func spawnFailed(err error) Result {
	return Result{Kind: KindSpawn, ExitCode: -1, Err: fmt.Errorf("cannot start: %w", err)}
}
