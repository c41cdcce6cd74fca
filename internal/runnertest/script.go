package runnertest

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/runnerdev/runner/internal/eventlog"
	"github.com/runnerdev/runner/internal/testkit"
)

// ScriptParams is the setup of the end-to-end scripts, without the
// scripts: the repository's examples in each script's directory, and the
// commands the scripts use beside testscript's own.
func ScriptParams() testscript.Params {
	return testscript.Params{
		RequireExplicitExec: true,
		Setup: func(env *testscript.Env) error {
			env.Setenv("NO_COLOR", "1")
			env.Setenv("GORACE", RaceNoExitSleep())
			// $HANG bounds, in whole seconds for timeout(1), a command that
			// must end by itself: it only turns a regression into a failure
			// instead of a hang, so it is the scaled handshake bound.
			env.Setenv("HANG", strconv.Itoa(int(testkit.Scale(testkit.Wait).Seconds())))
			root, err := Root()
			if err != nil {
				return err
			}
			// Scripts can run the repository's examples as a user would.
			return os.CopyFS(filepath.Join(env.WorkDir, "examples"), os.DirFS(filepath.Join(root, "examples")))
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"waitfile":     waitFile,
			"pidgone":      pidGone,
			"exitcode":     exitCode,
			"breakerpause": breakerPause,
			"dlqlease":     dlqLease,
			"jsondoc":      jsonDoc,
			"natsserver":   natsServer,
			"scale":        scaleCmd,
		},
	}
}

// Programs are the helper programs the scripts run beside runner, for
// testscript.Main: the test binary acts as each of them.
func Programs() map[string]func() {
	return map[string]func(){
		"flaky":   flaky,
		"dlqhold": dlqHold,
		"memcap":  memcap,
	}
}

// flaky COUNTFILE N [EXIT [MESSAGE]] fails until its N-th run: runs 1..N-1
// print MESSAGE on stderr and exit EXIT (default 1); run N and later exit 0.
func flaky() {
	args := os.Args[1:]
	if len(args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: flaky COUNTFILE N [EXIT [MESSAGE]]")
		os.Exit(2)
	}
	n, err := strconv.Atoi(args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, "flaky:", err)
		os.Exit(2)
	}
	code, msg := 1, "flaky failure"
	if len(args) > 2 {
		code, _ = strconv.Atoi(args[2])
	}
	if len(args) > 3 {
		msg = strings.Join(args[3:], " ")
	}
	data, _ := os.ReadFile(args[0])
	runs, _ := strconv.Atoi(strings.TrimSpace(string(data)))
	runs++
	if err := os.WriteFile(args[0], []byte(strconv.Itoa(runs)), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "flaky:", err)
		os.Exit(2)
	}
	if runs < n {
		fmt.Fprintf(os.Stderr, "%s (run %d)\n", msg, runs)
		os.Exit(code)
	}
	fmt.Printf("ok on run %d\n", runs)
	os.Exit(0)
}

// exitcode N PROGRAM [ARGS...] runs PROGRAM and checks its exit code is N.
func exitCode(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) < 2 {
		ts.Fatalf("usage: exitcode N PROGRAM [ARGS...]")
	}
	want, err := strconv.Atoi(args[0])
	if err != nil {
		ts.Fatalf("exitcode: %v", err)
	}
	got := 0
	if err := ts.Exec(args[1], args[2:]...); err != nil {
		var exit *exec.ExitError
		if !errors.As(err, &exit) {
			ts.Fatalf("exitcode: %v", err)
		}
		got = exit.ExitCode()
	}
	if got != want {
		ts.Fatalf("%s exited with %d, want %d", args[1], got, want)
	}
}

// jsondoc checks that the last command's stdout is one JSON document and
// nothing else, as --json and --output json promise.
func jsonDoc(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 0 || neg {
		ts.Fatalf("usage: jsondoc")
	}
	dec := json.NewDecoder(strings.NewReader(ts.ReadFile("stdout")))
	var doc any
	if err := dec.Decode(&doc); err != nil {
		ts.Fatalf("stdout is not a JSON document: %v", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		ts.Fatalf("stdout has more after its JSON document (at byte %d)", dec.InputOffset())
	}
}

// breakerpause JOB MIN SUCCESSES checks the job's event log: the workflow
// circuit breaker opened, every opening lasted at least MIN (less 10%, the
// stamping delay of events) before it half-opened, no new item started while it was open (an admitted item's
// own item-level retries are not new items), at most SUCCESSES (its
// success_threshold) items started while it was half-open, and it closed
// only after SUCCESSES of those probes succeeded.
func breakerPause(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 3 {
		ts.Fatalf("usage: breakerpause JOB MIN SUCCESSES")
	}
	min, err := time.ParseDuration(args[1])
	if err != nil {
		ts.Fatalf("breakerpause: %v", err)
	}
	successes, err := strconv.Atoi(args[2])
	if err != nil {
		ts.Fatalf("breakerpause: %v", err)
	}
	events, err := eventlog.Read(ts.MkAbs(filepath.Join(".runner", "jobs", args[0], "events.jsonl")), eventlog.Query{})
	if err != nil {
		ts.Fatalf("breakerpause: %v", err)
	}
	var (
		opened   time.Time
		openings int
		probes   map[string]bool // items started while half-open; nil when not half-open
		passed   int             // probes that succeeded
	)
	for _, e := range events {
		workflow := e.Str("scope") == "workflow"
		switch {
		case e.Type == "circuit_opened" && workflow:
			opened, probes = e.Time, nil
			openings++
		case e.Type == "circuit_half_open" && workflow && !opened.IsZero():
			// The events are stamped when written, a little after the
			// breaker's own transitions: allow a loaded machine 10% of MIN.
			if gap := e.Time.Sub(opened); gap < min-min/10 {
				ts.Fatalf("breaker half-opened %v after opening, want at least %v", gap, min)
			}
			opened, probes, passed = time.Time{}, map[string]bool{}, 0
		case e.Type == "circuit_closed" && workflow && probes != nil:
			if passed < successes {
				ts.Fatalf("breaker closed at %s after %d probe(s) succeeded, want %d", e.Time, passed, successes)
			}
			probes = nil
		case e.Type == "item_started" && e.Fields["attempt"] == json.Number("1"):
			if !opened.IsZero() {
				ts.Fatalf("item %s started at %s while the breaker was open (since %s)", e.ItemID, e.Time, opened)
			}
			if probes != nil {
				probes[e.ItemID] = true
				if len(probes) > successes {
					ts.Fatalf("item %s is probe %d of one half-open period, want at most %d", e.ItemID, len(probes), successes)
				}
			}
		case e.Type == eventlog.TypeItemSucceeded && probes[e.ItemID]:
			passed++
		}
	}
	if openings == 0 {
		ts.Fatalf("the workflow breaker never opened")
	}
	ts.Logf("breaker opened %d time(s)", openings)
}

// scale NAME DURATION sets $NAME to DURATION times the tests' timeout
// scale (testkit.Scale), written as Go writes a duration (500ms, 2s,
// 1m30s): a workflow's timeout reads it, and runner's messages show it so.
func scaleCmd(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 2 || neg {
		ts.Fatalf("usage: scale NAME DURATION")
	}
	d, err := time.ParseDuration(args[1])
	if err != nil {
		ts.Fatalf("scale: %v", err)
	}
	ts.Setenv(args[0], testkit.Scale(d).String())
}

// waitfile FILE waits for FILE to exist (testkit.Poll).
func waitFile(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 1 {
		ts.Fatalf("usage: waitfile FILE")
	}
	path := ts.MkAbs(args[0])
	// A handshake, not a timing: the bound only keeps a broken script from
	// hanging, and must hold on a machine loaded many times over.
	if !testkit.Poll(func() bool { _, err := os.Stat(path); return err == nil }) {
		ts.Fatalf("%s did not appear within %v", args[0], testkit.Scale(testkit.Wait))
	}
}

// pidgone PIDFILE checks (testkit.Poll) that the process whose pid the
// file holds no longer exists.
func pidGone(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 1 {
		ts.Fatalf("usage: pidgone PIDFILE")
	}
	pid, err := strconv.Atoi(strings.TrimSpace(ts.ReadFile(args[0])))
	if err != nil {
		ts.Fatalf("pidgone: %v", err)
	}
	if !testkit.Poll(func() bool { return syscall.Kill(pid, 0) != nil }) {
		syscall.Kill(pid, syscall.SIGKILL)
		ts.Fatalf("process %d is still running", pid)
	}
}
