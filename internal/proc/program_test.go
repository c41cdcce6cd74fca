package proc

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/runnerdev/runner/internal/testkit"
)

// writeProgram writes an executable shell script named name into dir.
func writeProgram(t *testing.T, dir, name, body string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
}

// Args reach the program as they are: nothing a shell would expand runs.
func TestArgsRunWithoutShell(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	args := []string{"a b", `$(touch PWNED1)`, "`touch PWNED2`", `'q" \`, "line1\nline2", "$HOME", ""}
	res := runT(t, Spec{
		Args:          append([]string{"printf", "[%s]"}, args...),
		Dir:           dir,
		Env:           []string{"PATH=/usr/bin:/bin"},
		CaptureStdout: true,
	})
	if res.Kind != KindOK {
		t.Fatalf("kind %q err %v", res.Kind, res.Err)
	}
	if got, want := string(res.Stdout), "["+strings.Join(args, "][")+"]"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if m, _ := filepath.Glob(filepath.Join(dir, "PWNED*")); len(m) > 0 {
		t.Errorf("an argument ran as a command: %v", m)
	}
}

// A later entry of Env overrides an earlier one of the same name, as it
// does for a shell command.
func TestArgsEnvLastWins(t *testing.T) {
	t.Parallel()
	res := runT(t, Spec{Args: []string{"printenv", "A", "B"}, Env: []string{"PATH=/usr/bin:/bin", "A=1", "B=x", "A=2"}, CaptureStdout: true})
	if res.Kind != KindOK || string(res.Stdout) != "2\nx\n" {
		t.Errorf("kind %q err %v stdout %q", res.Kind, res.Err, res.Stdout)
	}
}

// The program is looked up in the PATH of Spec.Env, not runner's, skipping
// files that are not executable; relative names and entries are relative
// to Spec.Dir.
func TestArgsLookPath(t *testing.T) {
	t.Parallel()
	dir, bin, other := t.TempDir(), t.TempDir(), t.TempDir()
	writeProgram(t, bin, "prog", "echo bin")
	writeProgram(t, dir, "prog", "echo dir")
	if err := os.WriteFile(filepath.Join(other, "prog"), []byte("not executable"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, path, prog, want string
	}{
		{"PATH of Env", "PATH=" + other + ":" + bin, "prog", "bin"},
		{"last PATH wins", "PATH=" + bin, "prog", "bin"},
		{"relative entry", "PATH=.", "prog", "dir"},
		{"name with a slash", "PATH=" + bin, "./prog", "dir"},
	} {
		env := []string{"PATH=/nowhere", tc.path}
		res := runT(t, Spec{Args: []string{tc.prog}, Dir: dir, Env: env, CaptureStdout: true})
		if res.Kind != KindOK || strings.TrimSpace(string(res.Stdout)) != tc.want {
			t.Errorf("%s: kind %q err %v stdout %q, want %q", tc.name, res.Kind, res.Err, res.Stdout, tc.want)
		}
	}
}

// A program that cannot be found or started is KindSpawn, like a shell
// that cannot start; a Spec with both forms is refused.
func TestArgsSpawnFailures(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	res := runT(t, Spec{Args: []string{"runner-test-no-such-program"}, Env: []string{"PATH=" + dir}})
	if res.Kind != KindSpawn || res.ExitCode != -1 || !errors.Is(res.Err, errNotFound) {
		t.Errorf("missing program: kind %q code %d err %v", res.Kind, res.ExitCode, res.Err)
	}
	if want := `cannot start: "runner-test-no-such-program": not found in PATH`; res.Err == nil || res.Err.Error() != want {
		t.Errorf("err %v, want %q", res.Err, want)
	}
	res = runT(t, Spec{Args: []string{"./missing"}, Dir: dir})
	if res.Kind != KindSpawn || !errors.Is(res.Err, os.ErrNotExist) {
		t.Errorf("missing path: kind %q err %v", res.Kind, res.Err)
	}
	for _, spec := range []Spec{
		{Args: []string{"true"}, Command: "true"},
		{Args: []string{}},
		{Args: []string{""}},
	} {
		if res := runT(t, spec); res.Kind != KindSpawn {
			t.Errorf("%+v: kind %q err %v", spec, res.Kind, res.Err)
		}
	}
}

// A program run directly leads its own process group like the shell does:
// a timeout kills what it started, and what it leaves behind when it exits
// is killed too.
func TestArgsProcessGroup(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeProgram(t, dir, "spawner", `sleep 300 & echo $! > "$1"; [ "$2" = wait ] && wait; exit 0`)
	env := []string{"PATH=" + dir + ":/usr/bin:/bin"}

	pidfile := filepath.Join(dir, "pid1")
	res, _ := runPastReady(t, context.Background(), Spec{Args: []string{"spawner", pidfile, "wait"}, Env: env, Timeout: testkit.Scale(200 * time.Millisecond)}, pidfile)
	if res.Kind != KindTimeout || res.ExitCode != 124 {
		t.Fatalf("timeout: kind %q code %d err %v", res.Kind, res.ExitCode, res.Err)
	}
	pid := readPid(t, pidfile)
	killOnCleanup(t, pid)
	waitGone(t, pid)

	pidfile = filepath.Join(dir, "pid2")
	res = runT(t, Spec{Args: []string{"spawner", pidfile, "leave"}, Env: env})
	if res.Kind != KindOK {
		t.Fatalf("leftover: kind %q err %v", res.Kind, res.Err)
	}
	pid = readPid(t, pidfile)
	killOnCleanup(t, pid)
	waitGone(t, pid)
}

// A program still open for writing somewhere (a child another goroutine
// forked just after the program was written) is started once it is
// closed; one that stays busy is a KindSpawn after a bounded number of
// tries. Not parallel: it replaces busyPause.
func TestArgsBusyProgram(t *testing.T) {
	dir := t.TempDir()
	writeProgram(t, dir, "prog", "echo started")
	prog := filepath.Join(dir, "prog")
	t.Cleanup(func() { busyPause = time.Sleep })
	for _, closeIt := range []bool{true, false} {
		w, err := os.OpenFile(prog, os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		pauses := 0
		busyPause = func(time.Duration) {
			pauses++
			if closeIt {
				w.Close()
			}
		}
		res := runT(t, Spec{Args: []string{prog}, CaptureStdout: true})
		w.Close()
		switch {
		case closeIt && (res.Kind != KindOK || string(res.Stdout) != "started\n" || pauses != 1):
			t.Errorf("closed after the first try: kind %q err %v stdout %q after %d pauses", res.Kind, res.Err, res.Stdout, pauses)
		case !closeIt && (res.Kind != KindSpawn || !errors.Is(res.Err, syscall.ETXTBSY) || pauses != 10):
			t.Errorf("busy throughout: kind %q err %v after %d pauses, want ETXTBSY after 10", res.Kind, res.Err, pauses)
		}
	}
}
