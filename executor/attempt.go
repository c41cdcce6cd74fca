package executor

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/runnerdev/runner/eventlog"
	"github.com/runnerdev/runner/proc"
	"github.com/runnerdev/runner/retryv2"
	"github.com/runnerdev/runner/state"
	"github.com/runnerdev/runner/workflow"
	"github.com/runnerdev/runner/workflow/interp"
)

// Executor runs steps: it owns what every step of a job shares.
type Executor struct {
	JobID  string
	Emit   func(eventlog.Event)
	Mask   func(string) string // replaces secret values in command output; nil: none
	Env    []string            // base environment of every command: process env + workflow env
	Grace  time.Duration       // TERM -> KILL; 0 = proc.DefaultGrace
	Stdout io.Writer           // live command output
	Stderr io.Writer
	Seed   uint64 // the job's seed for retry jitter
	TmpDir string // where Retry-After files are made

	breakers breakers
}

// Run is the context of one execution of a step: whose variables, which
// output and extra environment, for which map item.
type Run struct {
	Scope  *Scope
	Env    []string  // extra environment (map agents: RUNNER_ITEM_*)
	ItemID string    // map agents: the item, named on every event and seeding retry jitter
	Stdout io.Writer // overrides the executor's live output when set
	Stderr io.Writer
	Slot   retryv2.Slot // map agents: given back while the step waits out a delay
	// Map agents: Waiting checkpoints a step (not a repeat) before it waits
	// out a retry delay; From is such a checkpoint from a process that
	// ended, whose retry loop the step continues.
	Waiting func(state.StepRecord) error
	From    *state.StepRecord
}

func (r Run) stdout(x *Executor) io.Writer {
	if r.Stdout != nil {
		return r.Stdout
	}
	return x.Stdout
}

func (r Run) stderr(x *Executor) io.Writer {
	if r.Stderr != nil {
		return r.Stderr
	}
	return x.Stderr
}

// emit sends an event, naming the run's item if it has one.
func (x *Executor) emit(r Run, e eventlog.Event) {
	if x.Emit == nil {
		return
	}
	if r.ItemID != "" {
		e = e.WithItem(r.ItemID)
	}
	x.Emit(e)
}

// commandResult is one finished command with its captured output.
type commandResult struct {
	retryv2.Outcome
	stdout, stderr []byte // full captures when asked for
}

// runCommand expands and runs one command once.
func (x *Executor) runCommand(ctx context.Context, step *workflow.Step, cmd *interp.Template, r Run, attempt int, capture bool) commandResult {
	start := time.Now()
	script, env, dir, err := x.prepare(step, cmd, r, attempt)
	retryAfter := x.retryAfterFile()
	env = append(env, "RUNNER_RETRY_AFTER_FILE="+retryAfter)
	if err != nil {
		return commandResult{Outcome: retryv2.Outcome{Attempt: attempt, Kind: retryv2.KindSpawn, ExitCode: -1, Err: err, Duration: time.Since(start)}}
	}
	stdout, stderr := MaskOutput(r.stdout(x), x.Mask), MaskOutput(r.stderr(x), x.Mask)
	res := proc.Run(ctx, proc.Spec{
		Command:       script,
		Dir:           dir,
		Env:           env,
		Stdout:        stdout,
		Stderr:        stderr,
		Timeout:       step.Timeout,
		Grace:         x.Grace,
		CaptureStdout: capture,
		CaptureStderr: capture && step.CaptureStreams != workflow.StreamStdout,
	})
	flushOutput(stdout, stderr)
	out := retryv2.Outcome{
		Attempt:  attempt,
		ExitCode: res.ExitCode,
		Signal:   res.Signal,
		TimedOut: res.Kind == proc.KindTimeout,
		Stdout:   x.mask(string(res.StdoutTail)),
		Stderr:   x.mask(string(res.StderrTail)),
		Duration: res.Duration,
		Err:      res.Err,
	}
	if res.Kind != proc.KindOK {
		out.Kind = string(res.Kind)
		out.RetryAfter = readRetryAfter(retryAfter)
	}
	os.Remove(retryAfter)
	return commandResult{Outcome: out, stdout: res.Stdout, stderr: res.Stderr}
}

// mask replaces secret values in command output: the tails that failure
// messages, DLQ records and retry matchers are made of.
func (x *Executor) mask(s string) string {
	if x.Mask == nil {
		return s
	}
	return x.Mask(s)
}

// prepare expands a command, its environment and working directory.
func (x *Executor) prepare(step *workflow.Step, cmd *interp.Template, r Run, attempt int) (script string, env []string, dir string, err error) {
	script, err = cmd.Expand(r.Scope.Lookup(), interp.Shell)
	if err != nil {
		return "", nil, "", fmt.Errorf("interpolation: %w", err)
	}
	env = make([]string, 0, len(x.Env)+len(step.Env)+len(r.Env)+4)
	env = append(env, x.Env...)
	plain := r.Scope.PlainLookup()
	for _, e := range step.Env {
		v, err := e.Value.Expand(plain, interp.Plain)
		if err != nil {
			return "", nil, "", fmt.Errorf("interpolation: env %s: %w", e.Name, err)
		}
		env = append(env, e.Name+"="+v)
	}
	env = append(env, r.Env...)
	env = append(env,
		"RUNNER_JOB_ID="+x.JobID,
		"RUNNER_STEP="+step.Key(),
		"RUNNER_ATTEMPT="+strconv.Itoa(attempt),
	)
	if step.WorkingDir != nil {
		if dir, err = step.WorkingDir.Expand(plain, interp.Plain); err != nil {
			return "", nil, "", fmt.Errorf("interpolation: working_dir: %w", err)
		}
	}
	return script, env, dir, nil
}

var retryAfterSeq atomic.Uint64

// retryAfterFile names the file an attempt may write a delay to.
func (x *Executor) retryAfterFile() string {
	return filepath.Join(x.TmpDir, fmt.Sprintf("retry-after-%d-%d", os.Getpid(), retryAfterSeq.Add(1)))
}

// readRetryAfter reads a delay in seconds from a Retry-After file.
func readRetryAfter(path string) *time.Duration {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	d, ok := retryv2.ParseRetryAfter(string(data), time.Now())
	if !ok {
		return nil
	}
	return &d
}
