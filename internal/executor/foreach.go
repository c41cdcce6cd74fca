package executor

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/runnerdev/runner/internal/proc"
	"github.com/runnerdev/runner/retryv2"
	"github.com/runnerdev/runner/workflow"
)

// runForeach is one attempt of a foreach step: it lists the items, then
// runs each item's do steps in a child scope of r's, starting the items in
// order, at most Parallel at once. A failed item stops the loop, unless
// ContinueOnError, which runs every item; either way the step then fails
// as the first failed item's step did (Prodigy's foreach succeeds only
// with no failed item). Its stdout is what the do steps printed.
func (x *Executor) runForeach(ctx context.Context, step *workflow.Step, r Run, attempt int, capture bool) commandResult {
	start := time.Now()
	outer := ctx
	if step.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, step.Timeout)
		defer cancel()
	}
	f := step.Foreach
	do := r // the do steps run in the foreach's working_dir, as its items command does
	if step.WorkingDir != nil {
		_, dir, err := x.stepEnv(step, r, attempt, nil)
		if err != nil {
			return commandResult{Outcome: retryv2.Outcome{Attempt: attempt, Kind: retryv2.KindSpawn, ExitCode: -1, Err: err}}
		}
		do.Dir = dir
	}
	items := f.Items
	if items == nil {
		list := r
		list.Stdout = io.Discard // the items, not output for people
		listed := x.runCommand(ctx, step, workflow.Command{Kind: workflow.ShellCommand, Text: step.Command.Text}, list, attempt, true)
		if listed.Failed() {
			listed.Err = fmt.Errorf("the command that lists the items: %w", listed.Err)
			return listed
		}
		items = itemLines(listed.stdout)
	}
	if f.MaxItems > 0 && len(items) > f.MaxItems {
		items = items[:f.MaxItems]
	}
	out := &foreachOutput{stdout: r.stdout(x), stderr: r.stderr(x), capture: capture, whole: f.Parallel > 1, output: proc.Tail{Limit: outputLimit}}
	failed := make([]*StepResult, len(items))
	eachItem(ctx, len(items), f.Parallel, func(i int) bool {
		stdout, stderr := out.writers()
		res, ok := x.runItem(ctx, step, do, items, i, stdout, stderr)
		flushOutput(stdout, stderr)
		if !ok {
			failed[i] = &res
		}
		return ok || f.ContinueOnError
	})
	res := commandResult{
		Outcome:    retryv2.Outcome{Attempt: attempt, Duration: time.Since(start)},
		stdout:     out.captured.Bytes(),
		stdoutTail: streamTail{out.output.Bytes(), out.total},
	}
	res.Stdout = x.mask(out.tail.String())
	switch {
	case outer.Err() != nil:
		res.Kind, res.ExitCode, res.Err = retryv2.KindCanceled, -1, context.Cause(outer)
		return res
	case ctx.Err() != nil:
		res.Kind, res.ExitCode, res.TimedOut = retryv2.KindTimeout, 124, true
		res.Err = fmt.Errorf("timed out after %s", step.Timeout)
		return res
	}
	if first, err := itemsError(items, failed); first != nil {
		if f.ContinueOnError {
			err = fmt.Errorf("%w (continue_on_error: every item ran)", err)
		}
		res.Kind, res.ExitCode, res.Signal = cmp.Or(first.Outcome.Kind, "failed"), first.Outcome.ExitCode, first.Outcome.Signal
		res.Stderr, res.Err = first.Outcome.Stderr, err
	}
	return res
}

// runItem runs the do steps of item i in a child scope of r's, with
// ${item}, ${index} and ${total}; it returns false and the result of the
// step that failed the item.
func (x *Executor) runItem(ctx context.Context, step *workflow.Step, r Run, items []string, i int, stdout, stderr io.Writer) (StepResult, bool) {
	child := r
	child.Scope = r.Scope.Child()
	child.Scope.Set("item", items[i])
	child.Scope.Set("index", i)
	child.Scope.Set("total", len(items))
	child.within = r.qualified(step.Key()) + "[" + strconv.Itoa(i) + "]"
	child.Stdout, child.Stderr = stdout, stderr
	// The do steps are not steps of the phase: they are never
	// checkpointed, and they keep the slot of a map item, which items
	// running in parallel could not give back and take again each alone.
	child.Waiting, child.From, child.Slot, child.commits, child.Attempt = nil, nil, nil, nil, nil
	for _, s := range step.Foreach.Do {
		if res := x.RunStep(ctx, s, child); res.Fatal() {
			return res, false
		}
	}
	return StepResult{}, true
}

// qualified names a step in events and RUNNER_STEP: inside a foreach's do,
// after the foreach and the item, as in "fmt[2].step-1".
func (r Run) qualified(key string) string {
	if r.within == "" {
		return key
	}
	return r.within + "." + key
}

// itemsError describes the failed items (nil where an item succeeded) and
// returns the first one's result, or nil when none failed.
func itemsError(items []string, failed []*StepResult) (*StepResult, error) {
	var first *StepResult
	var err error
	n := 0
	for i, res := range failed {
		if res == nil {
			continue
		}
		if n++; first == nil {
			first, err = res, fmt.Errorf("item %d %q: %w", i, items[i], res.Err)
		}
	}
	if n > 1 {
		err = fmt.Errorf("%d of %d items failed, the first: %w", n, len(items), err)
	}
	return first, err
}

// itemLines are the items a command printed: its lines, without the empty
// ones.
func itemLines(out []byte) []string {
	var items []string
	for line := range strings.Lines(string(out)) {
		line = strings.TrimRight(line, "\r\n")
		if strings.TrimSpace(line) != "" {
			items = append(items, line)
		}
	}
	return items
}

// eachItem calls run(i) for i from 0 to n-1, starting them in order, at
// most parallel at once. It starts no more once ctx is done or a run
// returned false, and returns when the started ones have.
func eachItem(ctx context.Context, n, parallel int, run func(i int) bool) {
	var (
		wg    sync.WaitGroup
		stop  atomic.Bool
		slots = make(chan struct{}, parallel)
	)
	for i := range n {
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil || stop.Load() {
			break
		}
		wg.Go(func() {
			defer func() { <-slots }()
			if !run(i) {
				stop.Store(true)
			}
		})
	}
	wg.Wait()
}

// foreachOutput is where a foreach's items write: the run's writers, and
// a copy of stdout when the step captures it. Items that run in parallel
// write whole lines only, so that no line mixes two items.
type foreachOutput struct {
	mu             sync.Mutex
	stdout, stderr io.Writer
	capture, whole bool
	captured       bytes.Buffer
	tail           OutputTail
	output         proc.Tail // the last outputLimit bytes, for ${steps.ID.output}
	total          int64     // bytes of stdout
}

// writers are one item's stdout and stderr.
func (o *foreachOutput) writers() (stdout, stderr io.Writer) {
	return &itemWriter{o: o, w: o.stdout, stdout: true}, &itemWriter{o: o, w: o.stderr}
}

// itemWriter is one stream of one item. Flush (called when each command
// ends, and when the item ends) writes what is left, as a line of its own
// when items run in parallel.
type itemWriter struct {
	o      *foreachOutput
	w      io.Writer
	stdout bool
	buf    []byte
}

func (iw *itemWriter) Write(p []byte) (int, error) {
	if !iw.o.whole {
		return len(p), iw.pass(p)
	}
	iw.buf = append(iw.buf, p...)
	if end := bytes.LastIndexByte(iw.buf, '\n') + 1; end > 0 {
		err := iw.pass(iw.buf[:end])
		iw.buf = append(iw.buf[:0], iw.buf[end:]...)
		return len(p), err
	}
	return len(p), nil
}

func (iw *itemWriter) Flush() {
	if len(iw.buf) > 0 {
		iw.pass(append(iw.buf, '\n'))
		iw.buf = iw.buf[:0]
	}
}

// pass writes p to the run's writer, and keeps stdout for the result.
func (iw *itemWriter) pass(p []byte) error {
	iw.o.mu.Lock()
	defer iw.o.mu.Unlock()
	if iw.stdout {
		iw.o.tail.Write(p)
		iw.o.output.Write(p)
		iw.o.total += int64(len(p))
		if iw.o.capture {
			iw.o.captured.Write(p)
		}
	}
	_, err := iw.w.Write(p)
	return err
}
