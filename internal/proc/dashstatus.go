package proc

import (
	"errors"
	"strconv"
	"syscall"
	"unicode"
	"unicode/utf8"
)

// asDash turns the Result of a program run directly into the one sh
// would have given for it: sh reports a program killed by signal N as
// exit status 128+N, after printing the signal's description (but for
// SIGINT and SIGPIPE) on stderr; and when Run signals the group, sh
// itself dies of the SIGTERM, whatever the program does with it.
func asDash(res Result, ws syscall.WaitStatus, interrupted bool, stderr *stream) Result {
	switch {
	case interrupted:
		res.ExitCode, res.Signal = 128+int(syscall.SIGTERM), SignalName(syscall.SIGTERM)
	case res.Kind == KindSignal:
		sig := ws.Signal()
		if sig != syscall.SIGINT && sig != syscall.SIGPIPE {
			msg := signalDescription(sig)
			if ws.CoreDump() {
				msg += " (core dumped)"
			}
			stderr.consume([]byte(msg + "\n"))
		}
		code := 128 + int(sig)
		res = Result{Kind: KindExit, ExitCode: code, Err: errors.New("exit status " + strconv.Itoa(code))}
	}
	return res
}

// signalDescription is strsignal(3)'s text for sig, which dash prints:
// Go's, capitalised, for the classic signals; glibc's wording for the
// others.
func signalDescription(sig syscall.Signal) string {
	const sigrtmin, sigrtmax = 34, 64
	switch {
	case sig >= 1 && sig <= 31:
		s := sig.String()
		r, n := utf8.DecodeRuneInString(s)
		return string(unicode.ToUpper(r)) + s[n:]
	case sig >= sigrtmin && sig <= sigrtmax:
		return "Real-time signal " + strconv.Itoa(int(sig-sigrtmin))
	}
	return "Unknown signal " + strconv.Itoa(int(sig))
}
