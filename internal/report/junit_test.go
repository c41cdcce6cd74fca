package report

import (
	"encoding/json"
	"encoding/xml"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/runnerdev/runner/internal/eventlog"
	"github.com/runnerdev/runner/internal/state"
)

// outcome is a test case as the tests compare it: its class, name, time
// and what became of it.
func outcome(c junitCase) string {
	s := c.Class + " " + c.Name + " " + c.Time
	if c.Failure != nil {
		s += " failure(" + c.Failure.Type + "): " + c.Failure.Message
	}
	if c.Skipped != nil {
		s += " skipped: " + c.Skipped.Message
	}
	return s
}

func checkCases(t *testing.T, doc junitSuites, want []string) {
	t.Helper()
	cases := doc.Suites[0].Cases
	if len(cases) != len(want) {
		t.Fatalf("%d test cases, want %d: %+v", len(cases), len(want), cases)
	}
	for i, c := range cases {
		if got := outcome(c); got != want[i] {
			t.Errorf("test case %d:\n got %s\nwant %s", i, got, want[i])
		}
	}
}

func checkTotals(t *testing.T, doc junitSuites, tests, failures, skipped int) {
	t.Helper()
	s := doc.Suites[0]
	if doc.Tests != tests || doc.Failures != failures || doc.Skipped != skipped || s.Tests != tests || s.Failures != failures || s.Skipped != skipped {
		t.Errorf("totals %d/%d/%d, suite %d/%d/%d, want %d tests, %d failures, %d skipped",
			doc.Tests, doc.Failures, doc.Skipped, s.Tests, s.Failures, s.Skipped, tests, failures, skipped)
	}
}

func step(name string, more ...any) map[string]any {
	f := map[string]any{"step": name}
	for i := 0; i < len(more); i += 2 {
		f[more[i].(string)] = more[i+1]
	}
	return f
}

// A standard workflow has a test case per step, timed from its start:
// passed, failed with its error, skipped with the reason, and steps never
// reached skipped as "not run".
func TestJUnitStandardSteps(t *testing.T) {
	events := []eventlog.Event{
		ev(0, "job_started", nil),
		ev(0, "step_started", step("build")),
		ev(1500, "step_completed", step("build")),
		ev(1500, "step_skipped", step("optional", "reason", "when: false")),
		ev(2000, "step_started", step("test")),
		ev(2250, "step_failed", step("test", "error", `step "test" failed: exit status 1`)),
		ev(2300, "job_failed", nil),
	}
	job := JUnitJob{Meta: state.Meta{Workflow: "steps"}, Steps: []string{"build", "optional", "test", "deploy"}}
	doc := junit(job, events)
	checkCases(t, doc, []string{
		"steps.commands build 1.500",
		"steps.commands optional 0 skipped: when: false",
		`steps.commands test 0.250 failure(step_failed): step "test" failed: exit status 1`,
		"steps.commands deploy 0 skipped: not run",
	})
	checkTotals(t, doc, 4, 1, 2)
	if doc.Time != "2.300" || doc.Suites[0].Time != "2.300" {
		t.Errorf("time %s, suite %s: want the span of the events, 2.300", doc.Time, doc.Suites[0].Time)
	}
}

// A failure that on_failure: continue handled is still a failure (the
// summary counts it as failed), and its message says it was handled.
func TestJUnitHandledFailure(t *testing.T) {
	events := []eventlog.Event{
		ev(0, "step_started", step("lint")),
		ev(10, "step_failed", step("lint", "error", "exit status 1", "handled", "continue")),
		ev(10, "step_started", step("build")),
		ev(20, "step_completed", step("build")),
	}
	doc := junit(JUnitJob{Meta: state.Meta{Workflow: "handled"}, Steps: []string{"lint", "build"}}, events)
	checkCases(t, doc, []string{
		"handled.commands lint 0.010 failure(step_failed): exit status 1 (handled by on_failure: continue)",
		"handled.commands build 0.010",
	})
	checkTotals(t, doc, 2, 1, 0)
}

// A resumed job's log holds a step's failure and its later success: the
// test case reports the last outcome only.
func TestJUnitLastOutcome(t *testing.T) {
	events := []eventlog.Event{
		ev(0, "step_started", step("test")),
		ev(10, "step_failed", step("test", "error", "exit status 1")),
		ev(100, "step_started", step("test")),
		ev(130, "step_completed", step("test")),
	}
	doc := junit(JUnitJob{Meta: state.Meta{Workflow: "w"}, Steps: []string{"test"}}, events)
	checkCases(t, doc, []string{"w.commands test 0.030"})
	checkTotals(t, doc, 1, 0, 0)
}

// A MapReduce job has a test case per item, between its setup and reduce
// steps: an item is timed from its first attempt, fails with its last
// error's kind, step and exit code, and an item on_item_failure: skip let
// go is skipped. Attempt numbers are read back from the log as JSON
// numbers.
func TestJUnitMapReduce(t *testing.T) {
	item := func(id string, more ...any) map[string]any {
		f := step("work", more...)
		f["item_id"] = id
		return f
	}
	first, second := json.Number("1"), json.Number("2")
	events := []eventlog.Event{
		ev(0, "step_started", step("step-1")),
		ev(100, "step_completed", step("step-1")),
		ev(100, "map_started", nil),
		ev(100, "item_started", item("1", "attempt", first)),
		ev(300, "item_succeeded", item("1")),
		ev(300, "item_started", item("2", "attempt", first)),
		ev(400, "item_started", item("2", "attempt", second)),
		ev(700, "item_failed", item("2", "kind", "exit", "message", "two is bad", "exit_code", json.Number("3"))),
		ev(700, "item_started", item("3", "attempt", first)),
		ev(750, "item_failed", item("3", "kind", "exit", "message", "three is bad", "action", "skip")),
		ev(750, "map_completed", nil),
		ev(750, "step_started", step("step-1")),
		ev(800, "step_completed", step("step-1")),
	}
	doc := junit(JUnitJob{Meta: state.Meta{Workflow: "map"}, MapReduce: true}, events)
	checkCases(t, doc, []string{
		"map.setup step-1 0.100",
		"map.map 1 0.200",
		"map.map 2 0.400 failure(exit): two is bad",
		"map.map 3 0.050 skipped: on_item_failure: skip: three is bad",
		"map.reduce step-1 0.050",
	})
	checkTotals(t, doc, 5, 1, 1)
	if text := doc.Suites[0].Cases[2].Failure.Text; text != "two is bad\nstep: work\nexit code: 3" {
		t.Errorf("failure text %q", text)
	}
}

// The document is XML with its header, the job's id, status and seed as
// properties, and its start as the suite's timestamp.
func TestWriteJUnit(t *testing.T) {
	m := state.Meta{ID: "job-1", Workflow: "w", Status: state.Failed, Seed: 42, Started: time.Date(2026, 11, 22, 10, 15, 0, 0, time.UTC)}
	var out strings.Builder
	if err := WriteJUnit(&out, JUnitJob{Meta: m, Steps: []string{"only"}}, nil); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`<?xml version="1.0" encoding="UTF-8"?>` + "\n" + `<testsuites name="runner" tests="1" failures="0" skipped="1" time="">`,
		`<testsuite name="w" tests="1" failures="0" skipped="1" time="" timestamp="2026-11-22T10:15:00Z">`,
		`<property name="job_id" value="job-1"></property>`,
		`<property name="status" value="failed"></property>`,
		`<property name="seed" value="42"></property>`,
		`<testcase classname="w.commands" name="only" time="0">`,
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("no %s in\n%s", want, out.String())
		}
	}
	if !strings.HasSuffix(out.String(), "</testsuites>\n") {
		t.Errorf("the document does not end with a newline after </testsuites>")
	}
}

// attempt is a failed attempt's fields: its number, kind, exit code,
// message and what it printed.
func attempt(name string, n int, code int, msg, stdout, stderr string) map[string]any {
	return step(name, "attempt", json.Number(fmt.Sprint(n)), "kind", "exit", "exit_code", json.Number(fmt.Sprint(code)),
		"message", msg, "stdout_tail", stdout, "stderr_tail", stderr)
}

// A step that passed on its third attempt is flaky: a flakyFailure per
// failed attempt, each with its message, kind and output; the case's
// system-out and system-err are its last run's. One that failed every
// attempt lists the attempts before the last as rerunFailure.
func TestJUnitFlakyStep(t *testing.T) {
	events := []eventlog.Event{
		ev(0, "step_started", step("fetch")),
		ev(10, "attempt_failed", attempt("fetch", 1, 22, "exit status 22: HTTP 503", "try 1\n", "HTTP 503\n")),
		ev(20, "attempt_failed", attempt("fetch", 2, 22, "exit status 22: HTTP 502", "try 2\n", "HTTP 502\n")),
		ev(30, "attempt_succeeded", step("fetch", "attempt", json.Number("3"))),
		ev(30, "step_completed", step("fetch", "stdout_tail", "try 3\nfetched\n", "stderr_tail", "slow\n")),
		ev(40, "step_started", step("test")),
		ev(50, "attempt_failed", attempt("test", 1, 1, "exit status 1: red", "", "red\n")),
		ev(60, "attempt_failed", attempt("test", 2, 1, "exit status 1: still red", "", "still red\n")),
		ev(60, "step_failed", step("test", "error", `step "test" failed after 2 attempts (attempts exhausted): exit status 1: still red`, "stderr_tail", "still red\n")),
	}
	doc := junit(JUnitJob{Meta: state.Meta{Workflow: "ci"}, Steps: []string{"fetch", "test"}}, events)
	checkTotals(t, doc, 2, 1, 0)
	fetch, test := doc.Suites[0].Cases[0], doc.Suites[0].Cases[1]
	if fetch.Failure != nil || len(fetch.Flaky) != 2 || len(fetch.Reruns) != 0 {
		t.Fatalf("fetch: failure %v, %d flaky, %d reruns; want a pass with 2 flaky failures", fetch.Failure, len(fetch.Flaky), len(fetch.Reruns))
	}
	want := junitAttempt{Message: "exit status 22: HTTP 502", Type: "exit", StackTrace: "exit status 22: HTTP 502\nattempt: 2\nexit code: 22", SystemOut: "try 2\n", SystemErr: "HTTP 502\n"}
	if fetch.Flaky[1] != want {
		t.Errorf("fetch's second flaky failure\n got %+v\nwant %+v", fetch.Flaky[1], want)
	}
	if fetch.SystemOut != "try 3\nfetched\n" || fetch.SystemErr != "slow\n" {
		t.Errorf("fetch: system-out %q, system-err %q: want its last run's", fetch.SystemOut, fetch.SystemErr)
	}
	if test.Failure == nil || len(test.Reruns) != 1 || test.Reruns[0].Message != "exit status 1: red" || len(test.Flaky) != 0 {
		t.Errorf("test: failure %v, reruns %+v, flaky %+v: want a failure with the first attempt as its rerun", test.Failure, test.Reruns, test.Flaky)
	}
	if test.SystemErr != "still red\n" {
		t.Errorf("test: system-err %q", test.SystemErr)
	}
}

// A step cut short by Ctrl-C that passes when the job is resumed is a
// pass, not a flaky one: an interruption is no failure of the step.
func TestJUnitInterruptedStepIsNotFlaky(t *testing.T) {
	cut := attempt("slow", 1, 143, "canceled: interrupted by SIGINT", "", "")
	cut["kind"] = "canceled"
	events := []eventlog.Event{
		ev(0, "step_started", step("slow")),
		ev(10, "attempt_failed", cut),
		ev(10, "step_failed", step("slow", "error", "interrupted by SIGINT")),
		ev(10, "job_interrupted", map[string]any{}),
		ev(20, "job_resumed", map[string]any{}),
		ev(30, "step_started", step("slow")),
		ev(40, "attempt_succeeded", step("slow", "attempt", json.Number("1"))),
		ev(40, "step_completed", step("slow")),
	}
	doc := junit(JUnitJob{Meta: state.Meta{Workflow: "ci"}, Steps: []string{"slow"}}, events)
	checkTotals(t, doc, 1, 0, 0)
	if c := doc.Suites[0].Cases[0]; c.Failure != nil || len(c.Flaky) != 0 || len(c.Reruns) != 0 {
		t.Errorf("slow: failure %v, flaky %+v, reruns %+v: want a plain pass", c.Failure, c.Flaky, c.Reruns)
	}
}

// An item that failed in the job's run (after an item-level retry) and
// passed in a later dlq retry is flaky, with both failures; its time is
// that of the retry's run, and its output the retry's.
func TestJUnitItemFlakyAfterDLQRetry(t *testing.T) {
	item := func(more ...any) map[string]any {
		f := step("work", more...)
		f["item_id"] = "7"
		return f
	}
	events := []eventlog.Event{
		ev(0, "map_started", nil),
		ev(0, "item_started", item("attempt", json.Number("1"))),
		ev(100, "item_retrying", item("attempt", json.Number("1"), "kind", "exit", "exit_code", json.Number("1"), "message", "first", "stderr_tail", "e1\n")),
		ev(200, "item_started", item("attempt", json.Number("2"))),
		ev(300, "item_failed", item("attempt", json.Number("2"), "kind", "timeout", "exit_code", json.Number("124"), "message", "second", "action", "dlq", "stdout_tail", "o2\n")),
		ev(300, "map_completed", nil),
		ev(5000, "dlq_retry_started", nil),
		ev(5000, "item_started", item("attempt", json.Number("3"))),
		ev(5400, "item_succeeded", item("attempt", json.Number("3"), "stdout_tail", "done\n")),
	}
	doc := junit(JUnitJob{Meta: state.Meta{Workflow: "m"}, MapReduce: true}, events)
	checkCases(t, doc, []string{"m.map 7 0.400"})
	checkTotals(t, doc, 1, 0, 0)
	c := doc.Suites[0].Cases[0]
	if len(c.Flaky) != 2 || c.Flaky[0].Type != "exit" || c.Flaky[0].SystemErr != "e1\n" || c.Flaky[1].Type != "timeout" || c.Flaky[1].SystemOut != "o2\n" {
		t.Errorf("flaky failures %+v: want the retry's and the run's failure", c.Flaky)
	}
	if c.SystemOut != "done\n" {
		t.Errorf("system-out %q: want the dlq retry's output", c.SystemOut)
	}
}

// The XML has Surefire's elements: flakyFailure with message and type
// attributes and its own stackTrace, system-out and system-err, then the
// case's system-out.
func TestWriteJUnitFlakyXML(t *testing.T) {
	events := []eventlog.Event{
		ev(0, "step_started", step("fetch")),
		ev(10, "attempt_failed", attempt("fetch", 1, 22, "exit status 22: HTTP 503", "", "HTTP 503 <retry>\n")),
		ev(30, "step_completed", step("fetch", "stdout_tail", "fetched & saved\n")),
	}
	var out strings.Builder
	if err := WriteJUnit(&out, JUnitJob{Meta: state.Meta{Workflow: "ci"}, Steps: []string{"fetch"}}, events); err != nil {
		t.Fatal(err)
	}
	want := `    <testcase classname="ci.commands" name="fetch" time="0.030">
      <flakyFailure message="exit status 22: HTTP 503" type="exit">
        <stackTrace>exit status 22: HTTP 503&#xA;attempt: 1&#xA;exit code: 22</stackTrace>
        <system-err>HTTP 503 &lt;retry&gt;&#xA;</system-err>
      </flakyFailure>
      <system-out>fetched &amp; saved&#xA;</system-out>
    </testcase>`
	if !strings.Contains(out.String(), want) {
		t.Errorf("no\n%s\nin\n%s", want, out.String())
	}
}

// Read from its event log line by line and written case by case, the
// report is byte for byte the document xml.MarshalIndent makes of it.
func TestWriteJUnitFromLog(t *testing.T) {
	path := writeMapLog(t, 50)
	events, err := eventlog.Read(path, eventlog.Query{})
	if err != nil {
		t.Fatal(err)
	}
	job := JUnitJob{Meta: state.Meta{ID: "big", Workflow: "m"}, MapReduce: true}
	data, err := xml.MarshalIndent(junit(job, events), "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	want := xml.Header + string(data) + "\n"
	job.EventLog = path
	var out strings.Builder
	if err := WriteJUnit(&out, job, nil); err != nil {
		t.Fatal(err)
	}
	if out.String() != want {
		t.Errorf("got\n%s\nwant\n%s", out.String(), want)
	}
	if n := strings.Count(want, "<testcase "); n != 50 {
		t.Errorf("%d test cases, want 50", n)
	}
}

// A step's case carries its whole log as system-out, every attempt's
// output after its header, not the tail its events hold; a step without
// a log keeps the tail (issue 40.1).
func TestJUnitStepLog(t *testing.T) {
	dir := t.TempDir()
	big := strings.Repeat("vet says something\n", 1000)
	logPath := filepath.Join(dir, "commands-1.log")
	if err := os.WriteFile(logPath, []byte("=== step vet attempt 1 (run: run, 2026-11-27T22:50:00Z) ===\n"+big), 0o600); err != nil {
		t.Fatal(err)
	}
	events := []eventlog.Event{
		ev(0, "step_started", step("vet")),
		ev(10, "step_completed", step("vet", "stdout_tail", "vet says something\n")),
		ev(20, "step_started", step("test")),
		ev(30, "step_completed", step("test", "stdout_tail", "ok\n")),
	}
	logs := map[StepRef]string{{Phase: "commands", Label: "vet"}: logPath, {Phase: "commands", Label: "test"}: filepath.Join(dir, "commands-2.log")}
	doc := junit(JUnitJob{Meta: state.Meta{Workflow: "ci"}, Steps: []string{"vet", "test"}, StepLogs: logs}, events)
	vet, test := doc.Suites[0].Cases[0], doc.Suites[0].Cases[1]
	if !strings.HasSuffix(vet.SystemOut, big) || !strings.HasPrefix(vet.SystemOut, "=== step vet attempt 1 ") {
		t.Errorf("vet: system-out of %d bytes, want its whole log", len(vet.SystemOut))
	}
	if test.SystemOut != "ok\n" {
		t.Errorf("test (no log): system-out %q, want its tail", test.SystemOut)
	}
}

// A step of a parallel: block cancelled as another failed (fail_fast) is
// skipped, saying why, not failed: the failure is the other's. The cases
// are in the file's order, whichever step started first.
func TestJUnitParallelCancelledIsSkipped(t *testing.T) {
	in := func(m map[string]any) map[string]any { m["parallel"] = "checks"; return m }
	cut := in(attempt("build", 1, -1, "canceled: fail_fast: vet failed", "", ""))
	cut["kind"] = "canceled"
	events := []eventlog.Event{
		ev(0, "step_started", in(step("vet"))),
		ev(0, "step_started", in(step("build"))),
		ev(10, "attempt_failed", in(attempt("vet", 1, 3, "exit status 3", "", ""))),
		ev(10, "step_failed", in(step("vet", "error", "exit status 3"))),
		ev(11, "attempt_failed", cut),
		ev(11, "step_failed", in(step("build", "error", `step "build" failed: fail_fast: vet failed`))),
	}
	doc := junit(JUnitJob{Meta: state.Meta{Workflow: "ci"}, Steps: []string{"build", "vet"}}, events)
	checkTotals(t, doc, 2, 1, 1)
	if cs := doc.Suites[0].Cases; len(cs) != 2 || cs[0].Name != "build" || cs[1].Name != "vet" {
		t.Errorf("cases %+v, want build then vet", cs)
	}
	for _, c := range doc.Suites[0].Cases {
		switch {
		case c.Name == "build" && (c.Skipped == nil || c.Skipped.Message != `cancelled: step "build" failed: fail_fast: vet failed`):
			t.Errorf("build: skipped %+v, failure %+v", c.Skipped, c.Failure)
		case c.Name == "vet" && c.Failure == nil:
			t.Errorf("vet: no failure")
		}
	}
}
