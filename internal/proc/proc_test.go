package proc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/runnerdev/runner/internal/testkit"
)

// noPidFDEnv makes the test binary run without pidfds (see TestWithoutPidFD).
const noPidFDEnv = "PROC_TEST_NO_PIDFD"

func TestMain(m *testing.M) {
	if os.Getenv(noPidFDEnv) == "1" {
		usePidFD = false
	}
	if file := os.Getenv(orphanEnv); file != "" {
		runOrphan(file)
	}
	os.Exit(m.Run())
}

// TestWithoutPidFD runs the package's tests again with the exit checks
// used where there is no pidfd (other Unixes, Linux before 5.3), while
// the others run.
func TestWithoutPidFD(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: runs take the pidfd path here; a full run checks the other")
	}
	t.Parallel()
	cmd := exec.Command(os.Args[0], "-test.run=^Test", "-test.skip=^TestWithoutPidFD$|^TestPidFD$", "-test.count=1", "-test.timeout=2m")
	cmd.Env = append(os.Environ(), noPidFDEnv+"=1")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("tests without pidfd: %v\n%s", err, out)
	}
}

// TestPidFD checks that this kernel gives runs a pidfd, so the tests of
// this package exercise the path runs take here.
func TestPidFD(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("pidfds are Linux's")
	}
	pidfd := -1
	sys := &syscall.SysProcAttr{}
	requestPidFD(sys, &pidfd)
	pid, err := syscall.ForkExec("/bin/true", []string{"true"}, &syscall.ProcAttr{Sys: sys})
	if err != nil {
		t.Fatal(err)
	}
	var ws syscall.WaitStatus
	if _, err := syscall.Wait4(pid, &ws, 0, nil); err != nil {
		t.Fatal(err)
	}
	if pidfd < 0 {
		t.Skip("this kernel has no pidfds: runs check for the exit instead")
	}
	closeFDs(pidfd)
}

// hangLimit is how long runCtx waits for Run to return before it calls
// the run hung: the runs that could hang wait on a `sleep 300` that Run
// must not wait for, and a minute is far beyond any run that returns.
var hangLimit = testkit.Scale(time.Minute)

func runT(t *testing.T, spec Spec) Result {
	t.Helper()
	return runCtx(t, context.Background(), spec)
}

func runCtx(t *testing.T, ctx context.Context, spec Spec) Result {
	t.Helper()
	done := make(chan Result, 1)
	go func() { done <- Run(ctx, spec) }()
	select {
	case res := <-done:
		return res
	case <-time.After(hangLimit):
		t.Fatalf("Run hung: it has not returned %v later", hangLimit)
		return Result{}
	}
}

// gone reports whether pid no longer exists (a zombie counts as gone: it may
// never be reaped if pid 1 does not reap orphans).
func gone(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return true
	}
	return b[i+2] == 'Z' || b[i+2] == 'X'
}

func waitGone(t *testing.T, pid int) {
	t.Helper()
	testkit.Eventually(t, func() bool { return gone(pid) }, fmt.Sprintf("process %d gone", pid))
}

func readPid(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read pid file: %v", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 0 {
		t.Fatalf("bad pid file %q: %v", b, err)
	}
	return pid
}

// runPastReady runs spec, whose command writes a line to the file ready
// once it is as the test's timeout must find it, again with twice the
// timeout each time the timeout came first: on a loaded machine a shell
// may take longer than a short timeout to get that far. It returns the
// result and the timeout of the run that got there.
func runPastReady(t *testing.T, ctx context.Context, spec Spec, ready string) (Result, time.Duration) {
	t.Helper()
	for {
		res := runCtx(t, ctx, spec)
		data, _ := os.ReadFile(ready)
		if res.Kind != KindTimeout || strings.HasSuffix(string(data), "\n") || spec.Timeout > hangLimit {
			return res, spec.Timeout
		}
		t.Logf("the timeout of %v came before the command was ready: again with twice as long", spec.Timeout)
		spec.Timeout *= 2
	}
}

func killOnCleanup(t *testing.T, pid int) {
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
}

func TestExitCodes(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		cmd  string
		kind Kind
		code int
		err  string
	}{
		{"true", KindOK, 0, ""},
		{"exit 0", KindOK, 0, ""},
		{"false", KindExit, 1, "exit status 1"},
		{"exit 22", KindExit, 22, "exit status 22"},
		{"exit 255", KindExit, 255, "exit status 255"},
		{"no-such-command-xyz 2>/dev/null", KindExit, 127, "exit status 127"},
	} {
		res := runT(t, Spec{Command: tc.cmd})
		if res.Kind != tc.kind || res.ExitCode != tc.code || res.Signal != "" {
			t.Errorf("%q: got kind %q code %d signal %q", tc.cmd, res.Kind, res.ExitCode, res.Signal)
		}
		if tc.err == "" && res.Err != nil || tc.err != "" && (res.Err == nil || res.Err.Error() != tc.err) {
			t.Errorf("%q: err = %v, want %q", tc.cmd, res.Err, tc.err)
		}
		if res.Duration <= 0 {
			t.Errorf("%q: duration %v", tc.cmd, res.Duration)
		}
	}
}

func TestCapture(t *testing.T) {
	t.Parallel()
	res := runT(t, Spec{
		Command:       "printf hello; printf oops >&2",
		CaptureStdout: true,
		CaptureStderr: true,
	})
	if res.Kind != KindOK {
		t.Fatalf("kind %q err %v", res.Kind, res.Err)
	}
	if string(res.Stdout) != "hello" || string(res.Stderr) != "oops" {
		t.Errorf("captures %q %q", res.Stdout, res.Stderr)
	}
	if string(res.StdoutTail) != "hello" || string(res.StderrTail) != "oops" {
		t.Errorf("tails %q %q", res.StdoutTail, res.StderrTail)
	}
	if res.Truncated {
		t.Error("truncated")
	}

	res = runT(t, Spec{Command: "printf hello; printf oops >&2"})
	if res.Stdout != nil || res.Stderr != nil {
		t.Errorf("captures without request: %q %q", res.Stdout, res.Stderr)
	}
	if string(res.StdoutTail) != "hello" || string(res.StderrTail) != "oops" {
		t.Errorf("tails %q %q", res.StdoutTail, res.StderrTail)
	}
}

func seqOutput(n int) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "%d\n", i)
	}
	return b.String()
}

func TestTailKeepsLastBytes(t *testing.T) {
	t.Parallel()
	want := seqOutput(40000) // ~230 KiB
	res := runT(t, Spec{
		Command:       "seq 1 40000; seq 1 40000 >&2",
		CaptureStdout: true,
	})
	if res.Kind != KindOK {
		t.Fatalf("kind %q err %v", res.Kind, res.Err)
	}
	if string(res.Stdout) != want {
		t.Errorf("capture: %d bytes, want %d", len(res.Stdout), len(want))
	}
	wantTail := want[len(want)-TailSize:]
	if string(res.StdoutTail) != wantTail {
		t.Errorf("stdout tail: %d bytes, ends %q", len(res.StdoutTail), lastN(res.StdoutTail, 20))
	}
	if string(res.StderrTail) != wantTail {
		t.Errorf("stderr tail: %d bytes, ends %q", len(res.StderrTail), lastN(res.StderrTail, 20))
	}
}

func TestTailLimitAndByteCounts(t *testing.T) {
	t.Parallel()
	want := seqOutput(40000) // ~230 KiB, more than TailSize
	res := runT(t, Spec{Command: "seq 1 40000; printf abc >&2", TailLimit: 1 << 20})
	if string(res.StdoutTail) != want || string(res.StderrTail) != "abc" {
		t.Errorf("tails of %d and %d bytes, want the whole %d and 3", len(res.StdoutTail), len(res.StderrTail), len(want))
	}
	if res.StdoutBytes != int64(len(want)) || res.StderrBytes != 3 {
		t.Errorf("byte counts %d, %d; want %d, 3", res.StdoutBytes, res.StderrBytes, len(want))
	}
}

func lastN(b []byte, n int) []byte { return b[max(len(b)-n, 0):] }

func TestCaptureLimit(t *testing.T) {
	t.Parallel()
	want := seqOutput(100)
	res := runT(t, Spec{
		Command:       "seq 1 100; printf abc >&2",
		CaptureStdout: true,
		CaptureStderr: true,
		CaptureLimit:  10,
	})
	if res.Kind != KindOK {
		t.Fatalf("kind %q err %v", res.Kind, res.Err)
	}
	if string(res.Stdout) != want[:10] || !res.Truncated {
		t.Errorf("stdout %q truncated %v", res.Stdout, res.Truncated)
	}
	if string(res.Stderr) != "abc" {
		t.Errorf("stderr %q", res.Stderr)
	}
	if string(res.StdoutTail) != want {
		t.Errorf("tail must not be limited by CaptureLimit: %q", res.StdoutTail)
	}
}

func TestEnvAndDir(t *testing.T) {
	t.Setenv("PROC_TEST_INHERITED", "leak")
	dir := t.TempDir()
	res := runT(t, Spec{
		Command:       `printf '%s|%s|' "$FOO" "${PROC_TEST_INHERITED-unset}"; pwd`,
		Dir:           dir,
		Env:           []string{"FOO=bar baz"},
		CaptureStdout: true,
	})
	if res.Kind != KindOK {
		t.Fatalf("kind %q err %v", res.Kind, res.Err)
	}
	real, _ := filepath.EvalSymlinks(dir)
	if got, want := strings.TrimSpace(string(res.Stdout)), "bar baz|unset|"+real; got != want {
		t.Errorf("got %q, want %q", got, want)
	}

	// nil Env is an empty environment, not the parent's.
	res = runT(t, Spec{Command: `printf %s "${PROC_TEST_INHERITED-unset}"`, CaptureStdout: true})
	if string(res.Stdout) != "unset" {
		t.Errorf("nil Env leaked parent environment: %q", res.Stdout)
	}
}

func TestStdin(t *testing.T) {
	t.Parallel()
	res := runT(t, Spec{Command: "cat; echo done", CaptureStdout: true})
	if res.Kind != KindOK || string(res.Stdout) != "done\n" {
		t.Errorf("nil stdin: kind %q stdout %q", res.Kind, res.Stdout)
	}

	res = runT(t, Spec{Command: "tr a-z A-Z", Stdin: strings.NewReader("hello"), CaptureStdout: true})
	if res.Kind != KindOK || string(res.Stdout) != "HELLO" {
		t.Errorf("reader stdin: kind %q stdout %q", res.Kind, res.Stdout)
	}

	// A Stdin that never returns must not hold Run once the shell exited.
	pr, pw := io.Pipe()
	defer pw.Close()
	res = runT(t, Spec{Command: "exit 3", Stdin: pr})
	if res.Kind != KindExit || res.ExitCode != 3 {
		t.Errorf("blocking stdin: kind %q code %d err %v", res.Kind, res.ExitCode, res.Err)
	}
}

func TestTimeoutKillsGrandchild(t *testing.T) {
	t.Parallel()
	pidfile := filepath.Join(t.TempDir(), "pid")
	res, timeout := runPastReady(t, context.Background(), Spec{
		Command: "sleep 300 & echo $! > " + pidfile + "; wait",
		Timeout: testkit.Scale(200 * time.Millisecond),
	}, pidfile)
	if res.Kind != KindTimeout || res.ExitCode != 124 {
		t.Fatalf("kind %q code %d err %v", res.Kind, res.ExitCode, res.Err)
	}
	if res.Err == nil || res.Err.Error() != "timed out after "+timeout.String() {
		t.Errorf("err %v", res.Err)
	}
	if !errors.Is(res.Err, context.DeadlineExceeded) {
		t.Errorf("err %v is not DeadlineExceeded", res.Err)
	}
	pid := readPid(t, pidfile)
	killOnCleanup(t, pid)
	waitGone(t, pid)
}

func TestTimeoutIgnoringTERMGetsKILL(t *testing.T) {
	t.Parallel()
	ready := filepath.Join(t.TempDir(), "ready")
	res, _ := runPastReady(t, context.Background(), Spec{
		Command: "trap '' TERM; echo trapped > " + ready + "; sleep 300",
		Timeout: testkit.Scale(200 * time.Millisecond),
		Grace:   300 * time.Millisecond,
	}, ready)
	if res.Kind != KindTimeout || res.ExitCode != 124 {
		t.Fatalf("kind %q code %d err %v", res.Kind, res.ExitCode, res.Err)
	}
	if res.Signal != "SIGKILL" {
		t.Errorf("signal %q, want SIGKILL", res.Signal)
	}
}

// TestStubbornLeftoversAreGoneOnReturn: a grandchild that ignores SIGTERM
// gets SIGKILL after the grace, and is gone when Run returns, however the
// run ended. It does not hold the output pipes, so nothing else keeps Run
// waiting for it.
func TestStubbornLeftoversAreGoneOnReturn(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		end     string // how the shell goes on once the grandchild runs
		timeout time.Duration
		cancel  bool
		kind    Kind
	}{
		{name: "exit", end: "exit 3", kind: KindExit},
		{name: "timeout", end: "sleep 300", timeout: testkit.Scale(200 * time.Millisecond), kind: KindTimeout},
		{name: "cancel", end: "sleep 300", cancel: true, kind: KindCanceled},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			pidfile := filepath.Join(t.TempDir(), "pid")
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			w := &notifyWriter{want: "ready", seen: make(chan struct{})}
			if tc.cancel {
				w.hook = cancel
			}
			res, _ := runPastReady(t, ctx, Spec{
				Command: fmt.Sprintf(`sh -c 'trap "" TERM; echo $$ > %[1]s.tmp; mv %[1]s.tmp %[1]s; while :; do sleep 0.05; done' >/dev/null 2>&1 &
while [ ! -s %[1]s ]; do sleep 0.01; done
echo ready; %[2]s`, pidfile, tc.end),
				Stdout:  w,
				Timeout: tc.timeout,
				Grace:   200 * time.Millisecond,
			}, pidfile)
			if res.Kind != tc.kind {
				t.Fatalf("kind %q code %d err %v", res.Kind, res.ExitCode, res.Err)
			}
			pid := readPid(t, pidfile)
			killOnCleanup(t, pid)
			if !gone(pid) {
				t.Errorf("grandchild %d ignoring SIGTERM outlived Run", pid)
			}
		})
	}
}

// TestGroupAliveIgnoresZombies: a group whose only member has exited but
// is not reaped yet (pid 1 may take a second to reap orphans) counts as
// gone; one with a running member does not.
func TestGroupAliveIgnoresZombies(t *testing.T) {
	t.Parallel()
	if runtime.GOOS != "linux" {
		t.Skip("zombies are told apart through Linux's /proc")
	}
	pid, err := syscall.ForkExec("/bin/sleep", []string{"sleep", "300"}, &syscall.ProcAttr{Sys: &syscall.SysProcAttr{Setpgid: true}})
	if err != nil {
		t.Fatal(err)
	}
	killOnCleanup(t, pid)
	if !groupAlive(pid) {
		t.Error("a group with a running member counts as gone")
	}
	_ = syscall.Kill(pid, syscall.SIGKILL)
	waitGone(t, pid) // a zombie now: this test has not reaped it
	if err := syscall.Kill(-pid, 0); err != nil {
		t.Fatalf("the zombie's group cannot be signalled (%v): the test does not exercise a zombie", err)
	}
	if groupAlive(pid) {
		t.Error("a group of zombies counts as alive")
	}
	if _, err := syscall.Wait4(pid, nil, 0, nil); err != nil {
		t.Error(err)
	}
}

func TestNormalExitKillsBackgroundChild(t *testing.T) {
	t.Parallel()
	pidfile := filepath.Join(t.TempDir(), "pid")
	res := runT(t, Spec{Command: "sleep 300 & echo $! > " + pidfile + "; exit 4"})
	if res.Kind != KindExit || res.ExitCode != 4 {
		t.Fatalf("kind %q code %d err %v", res.Kind, res.ExitCode, res.Err)
	}
	pid := readPid(t, pidfile)
	killOnCleanup(t, pid)
	waitGone(t, pid)
}

func TestEscapedGrandchildHoldingStdout(t *testing.T) {
	t.Parallel()
	pidfile := filepath.Join(t.TempDir(), "pid")
	// The inner shell writes its pid only after setsid, so by the time the
	// outer shell exits the sleeper is surely out of the group.
	cmd := fmt.Sprintf(`setsid sh -c 'echo $$ > %[1]s.tmp; mv %[1]s.tmp %[1]s; exec sleep 300' &
while [ ! -s %[1]s ]; do sleep 0.01; done
echo out; exit 5`, pidfile)
	res := runT(t, Spec{Command: cmd, CaptureStdout: true})
	pid := readPid(t, pidfile)
	killOnCleanup(t, pid)
	if res.Kind != KindExit || res.ExitCode != 5 {
		t.Fatalf("kind %q code %d err %v", res.Kind, res.ExitCode, res.Err)
	}
	if string(res.Stdout) != "out\n" {
		t.Errorf("stdout %q", res.Stdout)
	}
	if gone(pid) {
		t.Errorf("escaped process %d was killed; test did not exercise the escape", pid)
	}
}

func TestParentCancel(t *testing.T) {
	t.Parallel()
	cause := errors.New("operator pressed ^C")
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	time.AfterFunc(100*time.Millisecond, func() { cancel(cause) })
	res := runCtx(t, ctx, Spec{Command: "sleep 300", Timeout: time.Minute})
	if res.Kind != KindCanceled {
		t.Fatalf("kind %q code %d err %v", res.Kind, res.ExitCode, res.Err)
	}
	if !errors.Is(res.Err, cause) {
		t.Errorf("err %v does not wrap the cause", res.Err)
	}

	// Already canceled: nothing is started.
	res = runCtx(t, ctx, Spec{Command: "true"})
	if res.Kind != KindCanceled || res.ExitCode != -1 || !errors.Is(res.Err, cause) {
		t.Errorf("pre-canceled: kind %q code %d err %v", res.Kind, res.ExitCode, res.Err)
	}
}

// TestLiveOutputArrivesBeforeExit proves output is not held back: the run
// only ends because the live writer saw "first" and canceled it.
func TestLiveOutputArrivesBeforeExit(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w := &notifyWriter{want: "first", seen: make(chan struct{}), hook: cancel}
	res := runCtx(t, ctx, Spec{Command: "echo first; sleep 300", Stdout: w})
	if res.Kind != KindCanceled || !errors.Is(res.Err, context.Canceled) {
		t.Fatalf("kind %q err %v", res.Kind, res.Err)
	}
	if string(res.StdoutTail) != "first\n" {
		t.Errorf("tail %q", res.StdoutTail)
	}
}

// notifyWriter records what it is given and calls hook once want was seen.
type notifyWriter struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	want string
	seen chan struct{}
	once sync.Once
	hook func()
}

func (w *notifyWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	if strings.Contains(w.buf.String(), w.want) {
		w.once.Do(func() {
			close(w.seen)
			if w.hook != nil {
				w.hook()
			}
		})
	}
	return len(p), nil
}

// A command longer than the kernel's limit for one argument still runs.
func TestLongCommand(t *testing.T) {
	long := strings.Repeat("x", 300<<10)
	res := runT(t, Spec{Command: `v="` + long + `"; echo ${#v} "$1"`, CaptureStdout: true})
	if res.Kind != KindOK || strings.TrimSpace(string(res.Stdout)) != strconv.Itoa(len(long)) {
		t.Fatalf("long command: %+v %q", res.Kind, res.Stdout)
	}
	leftovers, _ := filepath.Glob(filepath.Join(os.TempDir(), "runner-script-*"))
	if len(leftovers) > 0 {
		t.Errorf("temporary scripts left behind: %v", leftovers)
	}
}

func TestSpawnFailure(t *testing.T) {
	t.Parallel()
	res := runT(t, Spec{Command: "true", Dir: filepath.Join(t.TempDir(), "missing")})
	if res.Kind != KindSpawn || res.ExitCode != -1 {
		t.Fatalf("kind %q code %d err %v", res.Kind, res.ExitCode, res.Err)
	}
	if res.Err == nil || !strings.HasPrefix(res.Err.Error(), "cannot start: ") {
		t.Errorf("err %v", res.Err)
	}
	if !errors.Is(res.Err, os.ErrNotExist) {
		t.Errorf("err %v does not wrap ErrNotExist", res.Err)
	}
}

// A shell that closes its output early is still waited for.
func TestOutputClosedBeforeExit(t *testing.T) {
	t.Parallel()
	res := runT(t, Spec{Command: "exec >/dev/null 2>&1; sleep 0.2; exit 3"})
	if res.Kind != KindExit || res.ExitCode != 3 {
		t.Fatalf("kind %q code %d err %v", res.Kind, res.ExitCode, res.Err)
	}
}

func TestSignalDeath(t *testing.T) {
	t.Parallel()
	res := runT(t, Spec{Command: "kill -SEGV $$"})
	if res.Kind != KindSignal || res.ExitCode != 139 || res.Signal != "SIGSEGV" {
		t.Fatalf("kind %q code %d signal %q err %v", res.Kind, res.ExitCode, res.Signal, res.Err)
	}
	if res.Err == nil || res.Err.Error() != "killed by signal SIGSEGV" {
		t.Errorf("err %v", res.Err)
	}
}

func TestSharedLiveWriter(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer // not safe for concurrent use: Run must serialise
	res := runT(t, Spec{
		Command: "for i in 1 2 3 4 5 6 7 8 9 10; do echo out$i; echo err$i >&2; done",
		Stdout:  &buf,
		Stderr:  &buf,
	})
	if res.Kind != KindOK {
		t.Fatalf("kind %q err %v", res.Kind, res.Err)
	}
	for i := 1; i <= 10; i++ {
		for _, s := range []string{"out", "err"} {
			if !strings.Contains(buf.String(), fmt.Sprintf("%s%d\n", s, i)) {
				t.Errorf("missing %s%d in %q", s, i, buf.String())
			}
		}
	}
}

type slowWriter struct{ n int }

func (w *slowWriter) Write(p []byte) (int, error) {
	time.Sleep(time.Millisecond)
	w.n += len(p)
	return len(p), nil
}

type failWriter struct{ calls int }

func (w *failWriter) Write(p []byte) (int, error) {
	w.calls++
	return 0, errors.New("broken")
}

type panicWriter struct{}

func (panicWriter) Write(p []byte) (int, error) { panic("boom") }

func TestMisbehavingLiveWriters(t *testing.T) {
	t.Parallel()
	want := seqOutput(40000)
	slow, fail := &slowWriter{}, &failWriter{}
	res := runT(t, Spec{
		Command:       "seq 1 40000; seq 1 40000 >&2",
		Stdout:        slow,
		Stderr:        fail,
		CaptureStdout: true,
		CaptureStderr: true,
	})
	if res.Kind != KindOK || string(res.Stdout) != want || string(res.Stderr) != want {
		t.Fatalf("kind %q err %v, %d/%d bytes", res.Kind, res.Err, len(res.Stdout), len(res.Stderr))
	}
	if slow.n != len(want) {
		t.Errorf("slow writer got %d bytes, want %d", slow.n, len(want))
	}
	if fail.calls != 1 {
		t.Errorf("failing writer called %d times, want 1", fail.calls)
	}

	res = runT(t, Spec{Command: "echo hi", Stdout: panicWriter{}, CaptureStdout: true})
	if res.Kind != KindOK || string(res.Stdout) != "hi\n" {
		t.Errorf("panicking writer: kind %q stdout %q", res.Kind, res.Stdout)
	}
}

func TestConcurrentRuns(t *testing.T) {
	t.Parallel()
	const n = 50
	var wg sync.WaitGroup
	results := make([]Result, n)
	for i := range n {
		wg.Go(func() {
			results[i] = Run(context.Background(), Spec{
				Command:       `echo "$N"; echo "e$N" >&2; exit $((N % 3))`,
				Env:           []string{"N=" + strconv.Itoa(i)},
				CaptureStdout: true,
				Timeout:       hangLimit,
			})
		})
	}
	wg.Wait()
	for i, res := range results {
		if res.ExitCode != i%3 || string(res.Stdout) != fmt.Sprintf("%d\n", i) || string(res.StderrTail) != fmt.Sprintf("e%d\n", i) {
			t.Errorf("run %d: kind %q code %d stdout %q stderr %q err %v",
				i, res.Kind, res.ExitCode, res.Stdout, res.StderrTail, res.Err)
		}
	}
}

func TestFormatDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{
		30 * time.Second:        "30s",
		1500 * time.Millisecond: "1.5s",
		250 * time.Millisecond:  "250ms",
		90 * time.Second:        "1m30s",
		2 * time.Minute:         "2m",
		time.Hour:               "1h",
		90 * time.Minute:        "1h30m",
		time.Hour + time.Second: "1h0m1s",
	} {
		if got := formatDuration(d); got != want {
			t.Errorf("formatDuration(%v) = %q, want %q", d, got, want)
		}
	}
}

func TestTail(t *testing.T) {
	// Compare against a naive "keep the last TailSize bytes" model under
	// writes of many sizes.
	testTail(t, Tail{}, TailSize)
	testTail(t, Tail{Limit: 1000}, 1000)
}

func testTail(t *testing.T, r Tail, size int) {
	var all []byte
	sizes := []int{1, 7, 100, 4096, size - 1, 3, size, 5, size + 9, 65000, 2, 33}
	for k, n := range sizes {
		p := bytes.Repeat([]byte{byte('a' + k)}, n)
		for i := range p {
			p[i] += byte(i % 3)
		}
		r.Write(p)
		all = append(all, p...)
		want := all[max(len(all)-size, 0):]
		if got := r.Bytes(); !bytes.Equal(got, want) {
			t.Fatalf("after write %d (%d bytes): tail mismatch (len %d, want %d)", k, n, len(got), len(want))
		}
	}
	var empty Tail
	if empty.Bytes() != nil {
		t.Error("empty Tail not nil")
	}
}

func BenchmarkRunTrue(b *testing.B) {
	ctx := context.Background()
	for b.Loop() {
		if res := Run(ctx, Spec{Command: "true"}); res.Kind != KindOK {
			b.Fatal(res.Err)
		}
	}
}

// BenchmarkForkExecFloor is the least a Go program can do to run `sh -c
// true` and wait for it: the floor under BenchmarkRunTrue, which adds the
// pipes, the poll loop and the process group handling.
func BenchmarkForkExecFloor(b *testing.B) {
	attr := &syscall.ProcAttr{Env: os.Environ()}
	for b.Loop() {
		pid, err := syscall.ForkExec(shellPath, []string{shellPath, "-c", "true"}, attr)
		if err != nil {
			b.Fatal(err)
		}
		var ws syscall.WaitStatus
		if _, err := syscall.Wait4(pid, &ws, 0, nil); err != nil || ws.ExitStatus() != 0 {
			b.Fatal(err, ws)
		}
	}
}

func BenchmarkRunTrueTimeoutCapture(b *testing.B) {
	ctx := context.Background()
	for b.Loop() {
		res := Run(ctx, Spec{Command: "true", Timeout: time.Minute, CaptureStdout: true, CaptureStderr: true})
		if res.Kind != KindOK {
			b.Fatal(res.Err)
		}
	}
}

// Pipes are close-on-exec from the start: a concurrent run's child must not
// inherit them, or their EOF would wait for that child.
func TestPipeIsCloseOnExec(t *testing.T) {
	r, w, err := pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer closeFDs(r, w)
	for _, fd := range []int{r, w} {
		flags, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0)
		if err != nil || flags&unix.FD_CLOEXEC == 0 {
			t.Errorf("fd %d: flags %#x, err %v", fd, flags, err)
		}
	}
}

// TestNoDescriptorLeak is not parallel: other runs would open descriptors.
func TestNoDescriptorLeak(t *testing.T) {
	count := func() int {
		fds, err := os.ReadDir("/proc/self/fd")
		if err != nil {
			t.Skip("no /proc/self/fd here")
		}
		return len(fds)
	}
	before := count()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	specs := []Spec{
		{Command: "echo out; echo err >&2", CaptureStdout: true},
		{Command: "exit 3", Stdin: strings.NewReader("in")},
		{Command: "sleep 5", Timeout: 10 * time.Millisecond, Grace: 10 * time.Millisecond},
		{Command: "true", Dir: filepath.Join(t.TempDir(), "missing")},
		{Command: strings.Repeat(":", maxInlineScript+1)},
	}
	for _, spec := range specs {
		Run(ctx, spec)
	}
	if after := count(); after != before {
		t.Errorf("descriptors: %d before, %d after", before, after)
	}
}

// TestNoGoroutineLeak is not parallel: parallel tests wait until it is done.
func TestNoGoroutineLeak(t *testing.T) {
	before := runtime.NumGoroutine()
	ctx, cancel := context.WithCancel(context.Background())
	for i := range 20 {
		spec := Spec{Command: "echo x; echo y >&2", Stdin: strings.NewReader("in"), Stdout: io.Discard, CaptureStdout: true}
		if i%2 == 0 {
			spec.Timeout = time.Minute
		}
		if res := Run(ctx, spec); res.Kind != KindOK {
			t.Fatalf("kind %q err %v", res.Kind, res.Err)
		}
	}
	cancel()
	if !testkit.Poll(func() bool { return runtime.NumGoroutine() <= before }) {
		t.Fatalf("goroutines: %d before, %d after", before, runtime.NumGoroutine())
	}
}

func TestStartTime(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("start times are read from /proc")
	}
	self, ok := StartTime(os.Getpid())
	if !ok || self == 0 {
		t.Fatalf("StartTime(self) = %d, %v", self, ok)
	}
	if again, _ := StartTime(os.Getpid()); again != self {
		t.Errorf("StartTime changed: %d, then %d", self, again)
	}
	if parent, ok := StartTime(os.Getppid()); !ok || parent > self {
		t.Errorf("StartTime(parent) = %d, %v; want at most %d", parent, ok, self)
	}
	if _, ok := StartTime(1 << 30); ok {
		t.Error("StartTime of a pid that cannot exist is known")
	}
}
