// Package proc runs shell commands in their own process group, with
// per-attempt timeouts, bounded output capture and live streaming.
//
// [Run] takes a [Spec] and describes how the run ended in a [Result]:
//
//	res := proc.Run(ctx, proc.Spec{Command: "make test", Env: os.Environ(),
//		Timeout: time.Minute, Stdout: os.Stdout, CaptureStderr: true})
//	if res.Err != nil { // res.Kind: KindExit, KindTimeout, KindCanceled...
//		return fmt.Errorf("make test: %w", res.Err)
//	}
//
// A [Spec] with Args instead of Command runs a program directly, without a
// shell (an agent CLI given text that no shell may read): the program is
// found in the PATH of Spec.Env as sh would find it, and everything below
// holds for it as for the shell.
//
// # Commands without a shell
//
// A Command that is a plain list of words (see [Words]: no quote, escape,
// $, glob, redirection, separator or assignment, and a first word that
// is no builtin or reserved word of sh) runs directly, as GNU make runs
// such commands: its program, found in the PATH as sh finds it, is
// executed with the environment dash would give it (dash orders,
// filters and completes its environment: PWD, IFS, OPTIND, PPID). When
// the program cannot be executed (missing, not executable, a directory,
// a script without #!), Run starts sh after all, which prints what it
// always prints and exits 127 or 126, or runs the script. A program
// killed by a signal is reported as sh reports it: exit status 128+N,
// with the signal's description on stderr. This holds only where
// /bin/sh is dash ([Direct] says whether a command runs directly);
// Spec.Shell keeps a command under sh.
//
// # Process model
//
// [Run] starts "/bin/sh -c COMMAND" as the leader of a new process group
// (Setpgid). Everything the shell starts — children, grandchildren,
// backgrounded jobs — belongs to that group unless it deliberately leaves it
// (setsid, setpgid), so signals are always delivered to the group, never only
// to the shell:
//
//   - On timeout or cancellation of the context, the group receives SIGTERM
//     (followed by SIGCONT, so stopped members can act on it), and SIGKILL
//     after [Spec.Grace] if any member is still alive.
//   - When the shell exits on its own, whatever is left in its group is
//     terminated the same way: a step owns its processes and nothing it
//     backgrounded outlives it.
//   - Run returns only once the group is empty: members that ignore SIGTERM
//     cost the Grace period, then die of SIGKILL. A run that leaves nothing
//     behind pays one kill(2) for the check; one whose leftovers obey
//     SIGTERM, the few milliseconds they take to exit. Exited members
//     that pid 1 has not reaped yet do not count on Linux (/proc tells);
//     elsewhere they do. Should a member survive SIGKILL for another
//     second (uninterruptible sleep), Run gives up on it.
//
// # Output
//
// Stdout and stderr are read through pipes by Run's own goroutine, in one
// poll(2) loop that on Linux also watches a pidfd for the shell's exit
// (elsewhere, and on kernels without pidfds, it checks with WNOHANG). Run
// starts no goroutine of its own (one copies a non-file Stdin), so nothing
// stands between the shell's exit and Run's return but the syscalls. Each
// chunk is handed, as soon as it is read, to the live writer (if any), the
// optional full capture (bounded by [Spec.CaptureLimit]) and a Tail buffer
// that keeps the last [TailSize] (or [Spec.TailLimit]) bytes of the stream,
// counting them all ([Result.StdoutBytes]); writers are never
// called concurrently, even when the same writer is given for both streams.
// A live writer that returns an error or panics is dropped for the rest of
// the run; the run itself is unaffected. A live writer that blocks holds
// the command (its pipes fill up) and Run with it; a timeout or
// cancellation still signals the group on time.
//
// After the shell has exited and its group is gone, Run waits at most about
// one second for the pipes to reach EOF. A process that escaped
// the group while holding the pipes open therefore cannot hang Run: the pipes
// are closed and the result reflects the shell's own exit status.
//
// # Results
//
// Run never returns an error separately: every outcome is described by a
// [Result] whose Kind says what happened and whose Err is a ready-to-print
// error (nil only for [KindOK]).
//
// Run is safe for concurrent use and keeps no global mutable state.
//
// # Groups a dead process left
//
// A process killed with -9 cannot end its groups. [WithGroupHook] tells a
// caller of each group Run starts under a context (gitwork records git's
// groups, a NATS worker leases its items' groups to its watchdog);
// [StartTime] and [Runs] tell a process from a later one that took its pid;
// [EndGroup] ends what is left of a group whose process died.
package proc
