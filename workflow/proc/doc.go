// Package proc runs shell commands in their own process group, with
// per-attempt timeouts, bounded output capture and live streaming.
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
//     backgrounded outlives it. Run does not wait for the Grace period here;
//     the SIGKILL, if still needed, is delivered by a timer after Run returns.
//
// # Output
//
// Stdout and stderr are read through pipes by two goroutines, concurrently.
// Each chunk is handed, as soon as it is read, to the live writer (if any),
// the optional full capture (bounded by [Spec.CaptureLimit]) and a Tail
// buffer that keeps the last [TailSize] bytes of the stream. If the same
// writer is given for both streams, its Write is never called concurrently.
// A live writer that returns an error or panics is dropped for the rest of
// the run; the run itself is unaffected.
//
// After the shell has exited (and its group has been signalled), Run waits at
// most about one second for the pipes to reach EOF. A process that escaped
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
package proc
