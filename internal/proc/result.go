package proc

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// timeoutError is the cause of a run's timeout context, and Result.Err on
// KindTimeout. It matches context.DeadlineExceeded with errors.Is.
type timeoutError struct{ d time.Duration }

func (e *timeoutError) Error() string { return "timed out after " + formatDuration(e.d) }

// Is makes errors.Is(err, context.DeadlineExceeded) true.
func (e *timeoutError) Is(target error) bool { return target == context.DeadlineExceeded }

// Timeout reports true, like net.Error.
func (e *timeoutError) Timeout() bool { return true }

// formatDuration prints d like time.Duration.String without trailing zero
// units: 30s, 1.5s, 250ms, 1m30s, 2m, 1h.
func formatDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = s[:len(s)-2]
	}
	if strings.HasSuffix(s, "h0m") {
		s = s[:len(s)-2]
	}
	return s
}

// classify turns the shell's wait status into a Result.
func classify(ws syscall.WaitStatus, waitErr error) Result {
	if waitErr != nil {
		return Result{Kind: KindExit, ExitCode: -1, Err: fmt.Errorf("wait: %w", waitErr)}
	}
	if ws.Signaled() {
		sig := ws.Signal()
		name := SignalName(sig)
		msg := "killed by signal " + name
		if !strings.HasPrefix(name, "SIG") {
			msg = "killed by " + name
		}
		return Result{Kind: KindSignal, ExitCode: 128 + int(sig), Signal: name, Err: errors.New(msg)}
	}
	code := ws.ExitStatus()
	if code == 0 {
		return Result{Kind: KindOK}
	}
	return Result{Kind: KindExit, ExitCode: code, Err: errors.New("exit status " + strconv.Itoa(code))}
}

// interrupted is the Result of a run that Run killed because runCtx was
// done: a timeout if runCtx's own deadline fired, a cancellation otherwise.
func interrupted(parent, runCtx context.Context, timeout *timeoutError, exitCode int) Result {
	if timeout != nil && context.Cause(runCtx) == error(timeout) {
		return Result{Kind: KindTimeout, ExitCode: 124, Err: timeout}
	}
	return canceled(parent, exitCode)
}

// canceled is the Result of a run stopped because ctx was done.
func canceled(ctx context.Context, exitCode int) Result {
	cause := context.Cause(ctx)
	if cause == nil {
		cause = context.Canceled
	}
	return Result{Kind: KindCanceled, ExitCode: exitCode, Err: fmt.Errorf("canceled: %w", cause)}
}

// SignalName returns "SIGxxx" for common signals and "signal N" otherwise.
func SignalName(sig syscall.Signal) string {
	switch sig {
	case syscall.SIGHUP:
		return "SIGHUP"
	case syscall.SIGINT:
		return "SIGINT"
	case syscall.SIGQUIT:
		return "SIGQUIT"
	case syscall.SIGILL:
		return "SIGILL"
	case syscall.SIGTRAP:
		return "SIGTRAP"
	case syscall.SIGABRT:
		return "SIGABRT"
	case syscall.SIGBUS:
		return "SIGBUS"
	case syscall.SIGFPE:
		return "SIGFPE"
	case syscall.SIGKILL:
		return "SIGKILL"
	case syscall.SIGUSR1:
		return "SIGUSR1"
	case syscall.SIGSEGV:
		return "SIGSEGV"
	case syscall.SIGUSR2:
		return "SIGUSR2"
	case syscall.SIGPIPE:
		return "SIGPIPE"
	case syscall.SIGALRM:
		return "SIGALRM"
	case syscall.SIGTERM:
		return "SIGTERM"
	case syscall.SIGXCPU:
		return "SIGXCPU"
	case syscall.SIGXFSZ:
		return "SIGXFSZ"
	case syscall.SIGSYS:
		return "SIGSYS"
	}
	return "signal " + strconv.Itoa(int(sig))
}
