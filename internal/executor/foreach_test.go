package executor

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/runnerdev/runner/internal/eventlog"
	"github.com/runnerdev/runner/retryv2"
	"github.com/runnerdev/runner/workflow"
)

// foreachRun parses a workflow of one step and runs it in dir, returning
// the result, what the step printed and the events.
func foreachRun(t *testing.T, ctx context.Context, src string) (StepResult, string, []eventlog.Event) {
	t.Helper()
	wf, err := workflow.Parse("f.yml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu     sync.Mutex
		events []eventlog.Event
		out    bytes.Buffer
	)
	x := &Executor{
		JobID:  "j",
		Emit:   func(e eventlog.Event) { mu.Lock(); events = append(events, e); mu.Unlock() },
		Env:    os.Environ(),
		Stdout: &out,
		Stderr: &out,
		Grace:  100 * time.Millisecond,
		TmpDir: t.TempDir(),
	}
	res := x.RunStep(ctx, wf.Steps[0], Run{Scope: NewScope(nil, os.Environ()), Dir: t.TempDir()})
	return res, out.String(), events
}

// Items run one after another in order, each with ${item} (escaped for
// the shell), ${index} and ${total}; every do step runs for an item
// before the next item starts.
func TestForeachSequential(t *testing.T) {
	res, out, events := foreachRun(t, t.Context(), `
- name: loop
  foreach:
    foreach: ["a", "b c", "d; echo injected"]
    do:
      - shell: echo "${index}/${total}" ${item}
      - shell: echo "$RUNNER_STEP"
`)
	if res.Status != StepSucceeded || res.Err != nil {
		t.Fatalf("%s: %v", res.Status, res.Err)
	}
	want := "0/3 a\nloop[0].step-2\n1/3 b c\nloop[1].step-2\n2/3 d; echo injected\nloop[2].step-2\n"
	if out != want {
		t.Errorf("output\n%s\nwant\n%s", out, want)
	}
	var started []string
	for _, e := range events {
		if e.Type == eventlog.TypeStepStarted {
			started = append(started, e.Str("step")+" "+e.Command())
		}
	}
	wantStarted := []string{
		`loop foreach: ["a", "b c", "d; echo injected"]`,
		`loop[0].step 1 echo "${index}/${total}" ${item}`, `loop[0].step 2 echo "$RUNNER_STEP"`,
		`loop[1].step 1 echo "${index}/${total}" ${item}`, `loop[1].step 2 echo "$RUNNER_STEP"`,
		`loop[2].step 1 echo "${index}/${total}" ${item}`, `loop[2].step 2 echo "$RUNNER_STEP"`,
	}
	if !slices.Equal(started, wantStarted) {
		t.Errorf("step_started events\n  %s\nwant\n  %s", strings.Join(started, "\n  "), strings.Join(wantStarted, "\n  "))
	}
}

// The items of a command are its non-empty lines; max_items keeps the
// first ones; the command's own output is not shown. The command and the
// do steps run in the foreach's working_dir. A foreach's id holds what its
// steps printed, and what a do step captures stays in its item.
func TestForeachCommandItems(t *testing.T) {
	dir := t.TempDir()
	wf, err := workflow.Parse("f.yml", []byte(`
- id: loop
  working_dir: `+dir+`
  foreach:
    foreach: "printf 'one\n\n  \ntwo\r\nthree\nfour\n'"
    max_items: 3
    do:
      - shell: echo "[${item}]"
        capture_output: seen
      - shell: echo "again ${seen}" && touch ${item}
`))
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	x := &Executor{Env: os.Environ(), Stdout: &out, Stderr: &out, TmpDir: t.TempDir()}
	sc := NewScope(nil, os.Environ())
	res := x.RunStep(t.Context(), wf.Steps[0], Run{Scope: sc})
	if res.Status != StepSucceeded {
		t.Fatal(res.Err)
	}
	want := "[one]\nagain [one]\n[two]\nagain [two]\n[three]\nagain [three]\n"
	if out.String() != want {
		t.Errorf("output\n%s\nwant\n%s", out.String(), want)
	}
	if got := res.Vars["steps.loop"].(map[string]any)["output"]; got != strings.TrimSuffix(want, "\n") {
		t.Errorf("steps.loop.output %q", got)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 3 {
		t.Errorf("%d files in the working_dir, want 3 (one, two, three)", len(entries))
	}
	for _, name := range []string{"seen", "item", "index", "total"} {
		if v, ok := sc.Vars()[name]; ok {
			t.Errorf("%s = %v after the foreach", name, v)
		}
	}
}

// A failed item fails the foreach: later items do not start, and the step
// fails as the item's step did; with continue_on_error every item runs,
// then the step fails all the same; the step's on_failure applies as for
// any step.
func TestForeachFailure(t *testing.T) {
	const loop = `
    foreach: [a, b, c, d]
    do:
      - shell: echo ${item}; test ${item} != b && test ${item} != c
`
	res, out, _ := foreachRun(t, t.Context(), "- foreach:"+loop)
	if !res.Fatal() || res.Outcome.Kind != retryv2.KindExit || res.Outcome.ExitCode != 1 || out != "a\nb\n" {
		t.Errorf("failed item: %s %q %d, output %q", res.Status, res.Outcome.Kind, res.Outcome.ExitCode, out)
	}
	if want := `step "step 1" failed: item 1 "b": step "step 1" failed: exit status 1`; res.Err == nil || !strings.HasPrefix(res.Err.Error(), want) {
		t.Errorf("error %v, want %s", res.Err, want)
	}

	res, out, _ = foreachRun(t, t.Context(), "- foreach:\n    continue_on_error: true"+loop)
	if !res.Fatal() || res.Outcome.ExitCode != 1 || out != "a\nb\nc\nd\n" {
		t.Errorf("continue_on_error: %s exit %d, output %q", res.Status, res.Outcome.ExitCode, out)
	}
	if want := `step "step 1" failed: 2 of 4 items failed, the first: item 1 "b": step "step 1" failed: exit status 1: b (continue_on_error: every item ran)`; res.Err == nil || res.Err.Error() != want {
		t.Errorf("continue_on_error: error %v, want %s", res.Err, want)
	}

	res, out, _ = foreachRun(t, t.Context(), "- foreach: {foreach: 'echo a; exit 4', do: [{shell: echo ran}]}\n")
	if !res.Fatal() || res.Outcome.ExitCode != 4 || out != "" || res.Err == nil || !strings.Contains(res.Err.Error(), "the command that lists the items: exit status 4") {
		t.Errorf("failed items command: %s exit %d, output %q, error %v", res.Status, res.Outcome.ExitCode, out, res.Err)
	}

	res, _, _ = foreachRun(t, t.Context(), "- on_failure: true\n  foreach:"+loop)
	if res.Status != StepFailed || res.Handled != workflow.FailContinue || res.Fatal() {
		t.Errorf("on_failure: true: %s handled %q", res.Status, res.Handled)
	}
}

// parallel: 2 runs two items at once and never three: each item waits
// until two are running or no other item is left (and at most 10 s, so
// that a foreach that runs them one at a time fails the test instead of
// hanging), and counts the running ones.
func TestForeachParallel(t *testing.T) {
	dir := t.TempDir()
	res, _, _ := foreachRun(t, t.Context(), `
- foreach:
    foreach: [0, 1, 2, 3, 4, 5]
    parallel: 2
    do:
      - shell: |
          cd `+dir+` && mkdir running-${item}
          n=0
          while :; do
            running=$(ls -d running-* | wc -l)
            [ $running -ge 2 ] || [ $(ls -d running-* done-* 2>/dev/null | wc -l) -ge 6 ] || [ $n -ge 1000 ] && break
            sleep 0.01; n=$((n+1))
          done
          echo $running > seen-${item}
          touch done-${item}
          rmdir running-${item}
`)
	if res.Status != StepSucceeded {
		t.Fatal(res.Err)
	}
	pairs := 0
	for i := range 6 {
		seen, _ := os.ReadFile(filepath.Join(dir, "seen-"+strconv.Itoa(i)))
		n, _ := strconv.Atoi(strings.TrimSpace(string(seen)))
		if n < 1 || n > 2 {
			t.Errorf("item %d saw %d items running, want 2 (or 1 for the last ones)", i, n)
		}
		if n == 2 {
			pairs++
		}
	}
	// Not "items 0 and 1 saw 2": on a loaded machine item 0 can sleep
	// through items 1 to 5 running beside it, and then see only itself.
	if pairs == 0 {
		t.Error("no item saw another one running")
	}
}

// A timeout bounds the whole foreach; an interrupt stops it, kills what
// runs and starts nothing more, and is never handled by on_failure.
func TestForeachTimeoutAndInterrupt(t *testing.T) {
	res, _, _ := foreachRun(t, t.Context(), "- foreach: {foreach: [a, b], do: [{shell: sleep 30}]}\n  timeout: 100ms\n")
	if res.Status != StepFailed || res.Outcome.Kind != retryv2.KindTimeout || res.Err == nil || !strings.Contains(res.Err.Error(), "timed out after 100ms") {
		t.Errorf("timeout: %s %q %v", res.Status, res.Outcome.Kind, res.Err)
	}

	dir := t.TempDir()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	go func() {
		for {
			_, err0 := os.Stat(filepath.Join(dir, "0"))
			if _, err1 := os.Stat(filepath.Join(dir, "1")); err0 == nil && err1 == nil {
				cancel()
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
	}()
	res, _, _ = foreachRun(t, ctx, "- on_failure: true\n  foreach: {foreach: [0, 1, 2, 3], parallel: 2, do: [{shell: 'touch "+dir+"/${item}; sleep 30'}]}\n")
	if res.Status != StepFailed || res.Handled != "" || res.Outcome.Kind != retryv2.KindCanceled {
		t.Errorf("interrupt: %s handled %q kind %q", res.Status, res.Handled, res.Outcome.Kind)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 2 {
		t.Errorf("%d items started, want 2", len(entries))
	}
}

// eachItem never runs more than parallel items at once, and reaches that
// bound: each run blocks until the test lets one go, once parallel runs
// are in.
func TestEachItemBound(t *testing.T) {
	const n, parallel = 9, 3
	var active, most atomic.Int32
	started, release := make(chan int, n), make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		eachItem(t.Context(), n, parallel, func(i int) bool {
			now := active.Add(1)
			for m := most.Load(); now > m && !most.CompareAndSwap(m, now); m = most.Load() {
			}
			started <- i
			<-release
			active.Add(-1)
			return true
		})
	}()
	for range n / parallel {
		for range parallel {
			<-started
		}
		for range parallel {
			release <- struct{}{}
		}
	}
	<-done
	if most.Load() != parallel {
		t.Errorf("at most %d ran at once, want %d", most.Load(), parallel)
	}
}

// One at a time, the runs are in order, and none starts after one
// returned false or the context ended.
func TestEachItemStops(t *testing.T) {
	var ran []int
	eachItem(t.Context(), 5, 1, func(i int) bool { ran = append(ran, i); return i != 2 })
	if !slices.Equal(ran, []int{0, 1, 2}) {
		t.Errorf("ran %v, want [0 1 2]", ran)
	}
	ctx, cancel := context.WithCancel(t.Context())
	ran = nil
	eachItem(ctx, 5, 1, func(i int) bool { ran = append(ran, i); cancel(); return true })
	if !slices.Equal(ran, []int{0}) {
		t.Errorf("ran %v after the context ended, want [0]", ran)
	}
}

// Items running in parallel pass whole lines: a line one item writes in
// pieces is not cut by another item's; what is left without a newline
// when the item ends becomes a line of its own.
func TestForeachOutputWholeLines(t *testing.T) {
	var w bytes.Buffer
	o := &foreachOutput{stdout: &w, stderr: &w, whole: true, capture: true}
	a, _ := o.writers()
	b, _ := o.writers()
	a.Write([]byte("a1 "))
	b.Write([]byte("b1\nb2"))
	a.Write([]byte("still a1\n"))
	flushOutput(b)
	if want := "b1\na1 still a1\nb2\n"; w.String() != want || o.captured.String() != want {
		t.Errorf("output %q, captured %q, want %q", w.String(), o.captured.String(), want)
	}
}

// The foreach step's own keys apply to the loop as a whole: retry_config
// runs every item again after a failed attempt.
func TestForeachRetry(t *testing.T) {
	dir := t.TempDir()
	res, out, _ := foreachRun(t, t.Context(), `
- retry_config: {attempts: 2, initial_delay: 1ms}
  foreach:
    foreach: [a, b]
    do:
      - shell: echo ${item}; test ${item} = a || test -e `+dir+`/again || { touch `+dir+`/again; exit 1; }
`)
	if res.Status != StepSucceeded || res.Attempts != 2 || out != "a\nb\na\nb\n" {
		t.Errorf("%s after %d attempts, output %q", res.Status, res.Attempts, out)
	}
}
